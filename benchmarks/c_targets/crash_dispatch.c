/* A command frame whose deep paths hide two memory bugs, for showing crash findings.
 *
 * Layout: 'C' 'F' | flags | body length L (2..32) | check (little-endian u16) | body[L]
 * check = (16-bit sum of the body bytes) ^ 0xBEEF. body[0] is the command, body[1..] its operands.
 * Bug 1: commands 5..7 are reserved and have no handler; with flag 0x80 (extended) they are let
 *        through to the handler table and called through a null pointer (SIGSEGV).
 * Bug 2: "store" checks its slot index with <= instead of <, so slot 8 writes the "armed" flag
 *        that follows the slots: no crash, but a behaviour ("store-armed") no valid input has.
 * Reads stdin, or the file named by argv[1]. Prints one word; the exit code tells the same.
 */
#include <stdint.h>
#include <stdio.h>

#include "read_input.h"

enum { HEADER = 6, MAX_BODY = 32, N_SLOTS = 8, N_COMMANDS = 8, FLAG_EXTENDED = 0x80 };

struct frame {
    uint8_t flags;
    const uint8_t *body;
    size_t len;
};

typedef int (*handler)(const struct frame *);

static int outcome(const char *word, int code) {
    puts(word);
    return code;
}

static int cmd_nop(const struct frame *f) {
    return outcome(f->flags & 1 ? "nop-verbose" : "nop", 10);
}

static int cmd_echo(const struct frame *f) {
    if (f->len >= 3 && f->body[1] == 'h' && f->body[2] == 'i')
        return outcome("echo-hi", 11);
    return outcome("echo", 12);
}

static int cmd_sum(const struct frame *f) {
    unsigned total = 0;
    for (size_t i = 1; i < f->len; i++)
        total += f->body[i];
    return outcome(total > 1000 ? "sum-large" : "sum", total > 1000 ? 13 : 14);
}

static int cmd_store(const struct frame *f) {
    static struct {
        uint8_t slots[N_SLOTS];
        uint8_t armed;
    } mem;
    if (f->len < 3)
        return outcome("store-short", 15);
    if (f->body[1] > N_SLOTS) /* bug 2: should be >= */
        return outcome("store-bad-slot", 16);
    mem.slots[f->body[1]] = f->body[2];
    return outcome(mem.armed ? "store-armed" : "store", mem.armed ? 17 : 18);
}

static int cmd_reset(const struct frame *f) {
    return outcome(f->len > 4 && f->body[4] == 0xFF ? "reset-hard" : "reset", 19);
}

static const handler HANDLERS[N_COMMANDS] = {cmd_nop, cmd_echo, cmd_sum, cmd_store, cmd_reset};

static uint16_t check16(const uint8_t *body, size_t len) {
    uint16_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum = (uint16_t)(sum + body[i]);
    return sum ^ 0xBEEF;
}

int main(int argc, char **argv) {
    uint8_t buf[HEADER + MAX_BODY];
    long n = read_input(argc, argv, buf, sizeof buf);
    if (n < HEADER + 2)
        return outcome("short", 1);
    if (buf[0] != 'C' || buf[1] != 'F')
        return outcome("bad-magic", 2);
    struct frame f = {buf[2], buf + HEADER, buf[3]};
    if (f.len < 2 || f.len > MAX_BODY || f.len > (size_t)n - HEADER)
        return outcome("bad-length", 3);
    if (check16(f.body, f.len) != (uint16_t)(buf[4] | buf[5] << 8))
        return outcome("bad-checksum", 4);
    uint8_t cmd = f.body[0];
    if (cmd >= N_COMMANDS)
        return outcome("bad-command", 5);
    if (cmd >= 5 && !(f.flags & FLAG_EXTENDED))
        return outcome("reserved-command", 6);
    return HANDLERS[cmd](&f); /* bug 1: no handler for 5..7 */
}
