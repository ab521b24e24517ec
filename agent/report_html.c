/*
 * report_html.c - the report as one self-contained HTML page: `ameba report
 * FILE --html OUT`, `ameba run --html OUT`.
 *
 * Notes:
 *  - The page is a fixed skeleton with the report's JSON in a
 *    <script type="application/json"> element and the script and style of
 *    agent/html (embedded at build time, report_html_assets.c) inline: no
 *    network, no files beside it, so it opens anywhere after a copy. The
 *    script draws every view from the JSON (docs/user-guide.md, "The HTML
 *    report"); the writer only trims it.
 *  - Trimming keeps the page small whatever the program: objects and
 *    threads past the first KEEP_FULL keep only their names, sizes, share
 *    and the totals of the metrics the views select; past KEEP_MAX they
 *    are left out, and `html_pruned` says how many. A report of 100,000
 *    objects stays a few MB.
 *  - Every '<' of the JSON is written as \u003c (it can only occur inside
 *    strings), so no name can end the script element early; the title is
 *    HTML-escaped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "report.h"

#define KEEP_FULL 200
#define KEEP_MAX 5000

extern const char agent_html_js[];
extern const char agent_html_css[];

static const char *const VIEW_METRICS[] = {
	"mem_ref", "l1d_miss", "l2_miss", "llc_miss", "coh_miss", "tlb_miss", "est_stall_cycles",
};

/* Keeps only VIEW_METRICS (and the run's metric) in item's member key. */
static void totals_trim(cJSON *item, const char *key, const char *metric)
{
	cJSON *t = cJSON_GetObjectItemCaseSensitive(item, key), *m, *next;

	if (!cJSON_IsObject(t))
		return;
	for (m = t->child; m; m = next) {
		int keep = metric && m->string && !strcmp(m->string, metric);

		next = m->next;
		for (size_t k = 0; k < sizeof(VIEW_METRICS) / sizeof(VIEW_METRICS[0]) && !keep; k++)
			keep = m->string && !strcmp(m->string, VIEW_METRICS[k]);
		if (!keep)
			cJSON_Delete(cJSON_DetachItemViaPointer(t, m));
	}
}

/* Trims array key of root (see Notes); returns how many were left out. */
static int list_trim(cJSON *root, const char *key, const char *metric)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
	int n = 0, dropped = 0;

	if (!cJSON_IsArray(a))
		return 0;
	for (cJSON *it = a->child, *next; it; it = next) {
		next = it->next;
		if (n >= KEEP_MAX) {
			cJSON_Delete(cJSON_DetachItemViaPointer(a, it));
			dropped++;
			continue;
		}
		if (n >= KEEP_FULL) {
			cJSON_DeleteItemFromObjectCaseSensitive(it, "window");
			cJSON_DeleteItemFromObjectCaseSensitive(it, "ci95");
			totals_trim(it, "totals", metric);
		}
		n++;
	}
	return dropped;
}

static int buf_add(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 65536;
		char *b;

		while (c < *len + n + 1)
			c *= 2;
		if (!(b = realloc(*buf, c)))
			return -1;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = 0;
	return 0;
}

static int buf_str(char **buf, size_t *len, size_t *cap, const char *s)
{
	return buf_add(buf, len, cap, s, strlen(s));
}

/* s with & < > " escaped. */
static int buf_html(char **buf, size_t *len, size_t *cap, const char *s)
{
	int rc = 0;

	for (; *s && !rc; s++) {
		switch (*s) {
		case '&': rc = buf_str(buf, len, cap, "&amp;"); break;
		case '<': rc = buf_str(buf, len, cap, "&lt;"); break;
		case '>': rc = buf_str(buf, len, cap, "&gt;"); break;
		case '"': rc = buf_str(buf, len, cap, "&quot;"); break;
		default: rc = buf_add(buf, len, cap, s, 1);
		}
	}
	return rc;
}

/* json with every '<' as \u003c. */
static int buf_json(char **buf, size_t *len, size_t *cap, const char *json)
{
	const char *p = json, *lt;
	int rc = 0;

	while (!rc && (lt = strchr(p, '<'))) {
		rc = buf_add(buf, len, cap, p, (size_t)(lt - p));
		if (!rc)
			rc = buf_str(buf, len, cap, "\\u003c");
		p = lt + 1;
	}
	return rc ? rc : buf_str(buf, len, cap, p);
}

int agent_report_html_write(const cJSON *root, const char *path, char *err, size_t len)
{
	cJSON *copy = cJSON_Duplicate(root, 1), *pr;
	const cJSON *prog = cJSON_GetObjectItemCaseSensitive(root, "program");
	const cJSON *metric = cJSON_GetObjectItemCaseSensitive(root, "metric");
	const char *m = cJSON_IsString(metric) ? metric->valuestring : NULL;
	char *json = NULL, *page = NULL;
	size_t n = 0, cap = 0;
	int dropped_o, dropped_t, rc = AMEBA_ENOMEM;

	if (!copy)
		goto oom;
	dropped_o = list_trim(copy, "objects", m);
	dropped_t = list_trim(copy, "threads", m);
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "html_pruned");
	if (dropped_o || dropped_t) {
		pr = cJSON_AddObjectToObject(copy, "html_pruned");
		if (!pr || !cJSON_AddNumberToObject(pr, "objects", dropped_o) ||
		    !cJSON_AddNumberToObject(pr, "threads", dropped_t))
			goto oom;
	}
	if (!(json = cJSON_PrintUnformatted(copy)))
		goto oom;
	if (buf_str(&page, &n, &cap, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		    "<title>ameba report: ") ||
	    buf_html(&page, &n, &cap, cJSON_IsString(prog) ? prog->valuestring : "?") ||
	    buf_str(&page, &n, &cap, "</title>\n<style>\n") ||
	    buf_str(&page, &n, &cap, agent_html_css) ||
	    buf_str(&page, &n, &cap, "</style></head>\n<body>\n<noscript>This report draws its views "
		    "with JavaScript; the same figures are in the JSON report (ameba report FILE "
		    "prints them as a table).</noscript>\n<div id=\"ameba-app\"></div>\n"
		    "<script type=\"application/json\" id=\"ameba-report\">") ||
	    buf_json(&page, &n, &cap, json) ||
	    buf_str(&page, &n, &cap, "</script>\n<script>\n") ||
	    buf_str(&page, &n, &cap, agent_html_js) ||
	    buf_str(&page, &n, &cap, "</script>\n</body></html>\n"))
		goto oom;
	rc = agent_write_atomic(path, page, n, "--html", err, len);
	goto out;
oom:
	snprintf(err, len, "%s: out of memory while building the HTML report", path);
out:
	free(page);
	free(json);
	cJSON_Delete(copy);
	return rc;
}
