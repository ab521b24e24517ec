/*
 * objmap_conc.h - the object map's concurrent stress, shared by objmap_test
 * (runtime linked in) and objmap_tsan (objmap.c built with ThreadSanitizer).
 */
#ifndef AMEBA_TEST_OBJMAP_CONC_H
#define AMEBA_TEST_OBJMAP_CONC_H

#include <stdint.h>

/* Runs 4 threads adding, deleting and looking up blocks in shared pages;
 * returns the number of wrong answers (0 when correct). */
uint64_t objmap_conc_run(void);

#endif
