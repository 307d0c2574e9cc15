/*
 * no_events.c - includes the header and declares no event: the object must
 * still link into a shared object, its section bounds being weak.
 */
#include <ringtrace/ringtrace.h>

int no_events(int x);

int no_events(int x)
{
	return x + 1;
}
