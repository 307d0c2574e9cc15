/*
 * sigev - the main thread fires sig:main { i } for i = 0..19999 while a
 * helper thread keeps sending it SIGUSR1, whose handler fires
 * sig:handler { k } for k = 0, 1, 2, ... Handlers interrupt tracepoints
 * anywhere, between reserve and commit included. Every 10 events the main
 * thread waits until the handler has run more than i/10 times, so at least 2000
 * handler events are interleaved whatever the scheduling. Prints
 * "main 20000 handler K".
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(sig, main, RINGTRACE_U32(i));
RINGTRACE_EVENT(sig, handler, RINGTRACE_U32(k));

#define MAIN_EVENTS 20000u

static volatile uint32_t handled;
static volatile int finished;
static pthread_t main_thread;

static void on_usr1(int sig)
{
	(void)sig;
	ringtrace_tracepoint(sig, handler, handled);
	handled = handled + 1;
}

static void *pester(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&finished, __ATOMIC_ACQUIRE))
		pthread_kill(main_thread, SIGUSR1);
	return NULL;
}

int main(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();

	pthread_t helper;
	if (pthread_create(&helper, NULL, pester, NULL) != 0)
		return 3;
	for (uint32_t i = 0; i < MAIN_EVENTS; i++) {
		ringtrace_tracepoint(sig, main, i);
		if (i % 10 == 0)
			while (handled <= i / 10)
				;
	}
	__atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
	pthread_join(helper, NULL);
	/* Pending signals are handled before the count is read. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	printf("main %u handler %u\n", MAIN_EVENTS, handled);
	return 0;
}
