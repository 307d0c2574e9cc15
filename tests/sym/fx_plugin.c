/*
 * fx_plugin.c - a small shared object that tests/unit/test_unwind.c
 * dlopens and dlcloses in a loop while signal handlers capture stacks:
 * every iteration really maps and unmaps it (nothing else holds it), so
 * the loader's lock and lists change under the handlers.
 */
int fx_plugin_value(int x);

int fx_plugin_value(int x)
{
	return x * 7 + 1;
}
