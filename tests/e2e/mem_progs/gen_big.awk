# gen_big.awk - writes a large C file for tests/e2e/mem_real.sh to compile
# (gcc's cc1 under the allocation tracer): N functions with loops and
# switches, and a main that calls them all.
#
#   awk -v n=N -f gen_big.awk > big.c
BEGIN {
	print "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>"
	print "struct rec { int id; double w; char name[16]; struct rec *next; };"
	for (i = 0; i < n; i++) {
		printf "static int f%d(const struct rec *r, int k)\n{\n\tint acc = %d;\n", i, i
		printf "\tfor (int j = 0; j < k; j++) {\n\t\tswitch ((j + r->id) %% 7) {\n"
		for (c = 0; c < 7; c++)
			printf "\t\tcase %d: acc += j * %d + (int)(r->w * %d.5); break;\n", c, (i * 7 + c) % 97, c
		printf "\t\t}\n\t\tif (acc > %d)\n\t\t\tacc -= (int)strlen(r->name) + %d;\n\t}\n", 100000 + i, i % 13
		printf "\treturn acc ^ %d;\n}\n", i * 31
	}
	print "int main(int argc, char **argv)\n{\n\tstruct rec r = { argc, 1.5, \"gen\", NULL };\n\tlong t = 0;"
	for (i = 0; i < n; i++)
		printf "\tt += f%d(&r, %d);\n", i, i % 50
	print "\tprintf(\"%ld %s\\n\", t, argv[0]);\n\treturn 0;\n}"
}
