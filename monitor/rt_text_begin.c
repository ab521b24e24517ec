/*
 * rt_text_begin.c - first object of libameba-rt: marks where the runtime's
 * code starts. Together with rt_text_end.c (the last object) it brackets the
 * runtime's .text, which is contiguous because the runtime is linked whole,
 * in member order, and built with -fno-reorder-functions and
 * -fno-reorder-blocks-and-partition (so no code goes to .text.unlikely,
 * .text.startup or .text.hot). The interposers use the range to tell the
 * runtime's own calls to memset & co. from the program's.
 */
#include "mon.h"

__attribute__((noinline, used)) void mon_text_begin(void)
{
	__asm__ volatile("");
}
