/* recorder-values.c: records calls whose arguments are read from stdin, for the Python tests of value spelling.
 *
 * usage: recorder-values < ARGS
 * Each input line is one positional argument of the current call:
 *   f HEXFLOAT    a float (C99 hex, as Python's float.hex() writes it)
 *   i INTEGER     an int
 *   s HEX         a string, its UTF-8 bytes in hex
 *   call NAME     ends the current call (if any) and begins the next one
 * The MATE_* variables configure the recorder. Exit status 0, or 2 for bad input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mate_record.h"

static int
unhex(const char *s, char *out, size_t max)
{
	size_t n = 0;

	while (s[0] != '\0' && s[0] != '\n' && s[1] != '\0' && n + 1 < max) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (char)v;
		s += 2;
	}
	out[n] = '\0';
	return (int)n;
}

int
main(void)
{
	static char line[65536], text[32768];
	mate_call *c = NULL;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "call ", 5) == 0) {
			mate_call_end(c);
			c = MATE_ACTIVE() ? mate_call_begin(line + 5, "values", "(*args)") : NULL;
		} else if (line[0] == 'f' && line[1] == ' ')
			mate_call_float(c, MATE_ARG, NULL, strtod(line + 2, NULL));
		else if (line[0] == 'i' && line[1] == ' ')
			mate_call_int(c, MATE_ARG, NULL, strtoll(line + 2, NULL, 10));
		else if (line[0] == 's' && line[1] == ' ' && unhex(line + 2, text, sizeof(text)) >= 0)
			mate_call_str(c, MATE_ARG, NULL, text);
		else {
			fprintf(stderr, "recorder-values: bad line: %s\n", line);
			return 2;
		}
	}
	mate_call_end(c);
	return 0;
}
