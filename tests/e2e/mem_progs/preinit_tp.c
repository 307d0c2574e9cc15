/*
 * preinit_tp.c - linked with libpreinit_tp_plain.so and then
 * libpreinit_tp_stack.so (tests/e2e/mem_preinit.sh; ld.so initialises
 * the second first): fires each library's event once, prints "tp ok".
 */
#include <stdio.h>

void preinit_tp_stack(unsigned n);
void preinit_tp_plain(unsigned n);

int main(void)
{
	preinit_tp_stack(1);
	preinit_tp_plain(2);
	puts("tp ok");
	return 0;
}
