/*
 * driver.c: the main() that `symcc-ulfm build` links into a libFuzzer harness's sanitizer and SymCC
 * builds (symcc_ulfm/harness/build.py), where no fuzzing engine provides one.
 *
 * It calls LLVMFuzzerInitialize when the harness defines one, then LLVMFuzzerTestOneInput once on
 * standard input when no argument or "-" is given (the manifest's args: ["-"], as AFL++'s driver
 * takes it), or once for each file named. Each input is handed over in a buffer of exactly its
 * size, so a sanitizer sees a read past its end. A file that cannot be read exits 2, naming it; the harness's
 * own crash is its signal or its sanitizer's report.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run(FILE *in, const char *name) {
    size_t size = 0, capacity = 4096;
    uint8_t *buffer = malloc(capacity);
    if (buffer == NULL) {
        fprintf(stderr, "driver: out of memory reading %s\n", name);
        return 2;
    }
    for (;;) {
        size += fread(buffer + size, 1, capacity - size, in);
        if (size < capacity)
            break;
        uint8_t *larger = realloc(buffer, capacity * 2);
        if (larger == NULL) {
            free(buffer);
            fprintf(stderr, "driver: out of memory reading %s\n", name);
            return 2;
        }
        buffer = larger;
        capacity *= 2;
    }
    if (ferror(in)) {
        free(buffer);
        fprintf(stderr, "driver: cannot read %s: %s\n", name, strerror(errno));
        return 2;
    }
    uint8_t *input = malloc(size ? size : 1);  /* exactly its size: a read past it is the harness's */
    if (input == NULL) {
        free(buffer);
        fprintf(stderr, "driver: out of memory reading %s\n", name);
        return 2;
    }
    memcpy(input, buffer, size);
    free(buffer);
    LLVMFuzzerTestOneInput(input, size);
    free(input);
    return 0;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    if (argc < 2)
        return run(stdin, "standard input");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-") == 0) {
            if (run(stdin, "standard input"))
                return 2;
            continue;
        }
        FILE *in = fopen(argv[i], "rb");
        if (in == NULL) {
            fprintf(stderr, "driver: cannot open %s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        int status = run(in, argv[i]);
        fclose(in);
        if (status)
            return status;
    }
    return 0;
}
