/* rt_text_end.c - last object of libameba-rt: see rt_text_begin.c. */
#include "mon.h"

__attribute__((noinline, used)) void mon_text_end(void)
{
	__asm__ volatile("");
}
