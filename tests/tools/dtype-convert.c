/* dtype-convert.c: test helper: runs libmate's float conversions on hex bit patterns from stdin. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mate_core.h"
#include "test.h"   /* test_f32_bits() */

/* decode <fmt>: each input line is a code of f16, bf16, e4m3fn or e5m2; prints the f32 bits. */
static int
decode(const char *fmt)
{
	unsigned long v;
	float f;

	while (scanf("%lx", &v) == 1) {
		if (strcmp(fmt, "f16") == 0)
			f = mate_f16_to_f32((uint16_t)v);
		else if (strcmp(fmt, "bf16") == 0)
			f = mate_bf16_to_f32((uint16_t)v);
		else if (strcmp(fmt, "e4m3fn") == 0)
			f = mate_f8e4m3fn_to_f32((uint8_t)v);
		else if (strcmp(fmt, "e5m2") == 0)
			f = mate_f8e5m2_to_f32((uint8_t)v);
		else
			return 2;
		printf("%08x\n", (unsigned)test_f32_bits(f));
	}
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned long v;

	if (argc == 3 && strcmp(argv[1], "decode") == 0)
		return decode(argv[2]);
	if (argc != 2 || strcmp(argv[1], "encode") != 0) {
		fprintf(stderr, "usage: dtype-convert encode | decode f16|bf16|e4m3fn|e5m2\n"
		    "  encode: f32 bit patterns (hex, one a line) -> \"f16 bf16 e4m3fn e5m2\" (hex)\n");
		return 2;
	}
	while (scanf("%lx", &v) == 1) {
		uint32_t u = (uint32_t)v;
		float f;

		memcpy(&f, &u, 4);
		printf("%04x %04x %02x %02x\n", mate_f32_to_f16(f), mate_f32_to_bf16(f),
		    mate_f32_to_f8e4m3fn(f), mate_f32_to_f8e5m2(f));
	}
	return ferror(stdout) ? 1 : 0;
}
