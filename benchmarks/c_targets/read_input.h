/* Input for the benchmark targets: the file named by argv[1] (AFL's @@), else stdin. */
#ifndef READ_INPUT_H
#define READ_INPUT_H

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/* Reads at most cap bytes; returns how many, or -1 when the file cannot be opened. */
static long read_input(int argc, char **argv, uint8_t *buf, size_t cap) {
    int fd = 0;
    if (argc > 1 && (fd = open(argv[1], O_RDONLY)) < 0)
        return -1;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (fd != 0)
        close(fd);
    return (long)got;
}

#endif
