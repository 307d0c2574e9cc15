/*
 * fuzz_tsdl.c - libFuzzer target for the metadata reader: packetized
 * metadata unpacking (rd_meta_text) and the TSDL parser (rd_meta_parse).
 *
 *   make build-fuzz/fuzz_tsdl
 *   mkdir -p /tmp/fz-tsdl && build/tests/tools/ctf_gen /tmp/fz-seed && cp /tmp/fz-seed/metadata /tmp/fz-tsdl/
 *   build-fuzz/fuzz_tsdl -dict=tests/fuzz/tsdl.dict -max_total_time=60 /tmp/fz-tsdl
 *
 * Any input must give a model or an error with a line number; never a
 * crash, a leak, a hang or unbounded memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/tsdl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	char *text;
	size_t len;
	struct rd_meta *m = NULL;

	if (rd_meta_text(data, size, &text, &len, err, sizeof(err)) < 0)
		return 0;
	if (rd_meta_parse(text, len, &m, err, sizeof(err)) == 0) {
		/* Walk what was built. */
		for (size_t i = 0; i < m->n_streams; i++)
			for (size_t k = 0; k < m->streams[i].n_events; k++)
				if (!rd_meta_event(&m->streams[i], m->streams[i].events[k]->id))
					abort();
		rd_meta_free(m);
	} else if (strncmp(err, "line ", 5) != 0 && strncmp(err, "metadata larger", 15) != 0) {
		abort();             /* every parse error names its line */
	}
	free(text);
	return 0;
}
