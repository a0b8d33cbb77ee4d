/* A message with a checksum-guarded header and an opcode switch.
 *
 * Layout: 'S' 'Q' | version (1..3) | body length L (1..48) | check | body[L]
 * check = (sum of body bytes) ^ (xor of body bytes) ^ 0xA5, all modulo 256.
 * body[0] is the opcode; the rest are its operands. Reads stdin, or the file named by argv[1].
 * Prints one word naming what was reached; the exit code tells the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "read_input.h"

enum { HEADER = 5, MAX_BODY = 48 };

static int outcome(const char *word, int code) {
    puts(word);
    return code;
}

static uint8_t check_byte(const uint8_t *body, size_t len) {
    uint8_t sum = 0, x = 0;
    for (size_t i = 0; i < len; i++) {
        sum = (uint8_t)(sum + body[i]);
        x ^= body[i];
    }
    return (uint8_t)(sum ^ x ^ 0xA5);
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int op_set(const uint8_t *body, size_t len) {
    if (len < 4)
        return outcome("set-short", 20);
    uint8_t field = body[1];
    uint16_t value = le16(body + 2);
    if (field >= 8)
        return outcome("set-bad-field", 21);
    if (field == 5 && value >= 1000 && value <= 2000)
        return outcome("set-timeout-range", 22);
    if (value > 0xF000)
        return outcome("set-high", 23);
    return outcome("set", 24);
}

static int op_calc(const uint8_t *body, size_t len) {
    if (len < 4)
        return outcome("calc-short", 30);
    uint8_t a = body[1], b = body[2];
    uint8_t r;
    switch (body[3]) {
    case '+': r = (uint8_t)(a + b); break;
    case '*': r = (uint8_t)(a * b); break;
    case '^': r = a ^ b; break;
    default: return outcome("calc-bad-op", 31);
    }
    if (r == 42 && a > b && b > 3)
        return outcome("calc-answer", 32);
    return outcome("calc", 33);
}

static int op_admin(uint8_t version, const uint8_t *body, size_t len) {
    if (version != 3)
        return outcome("admin-old-version", 40);
    if (len < 9)
        return outcome("admin-short", 41);
    if (memcmp(body + 1, "root", 4) != 0)
        return outcome("admin-denied", 42);
    uint32_t token = le32(body + 5);
    if ((token ^ 0x5EC0DE00u) * 2654435761u == 0x2D7A6F31u)
        return outcome("admin-token-ok", 43);
    return outcome("admin-bad-token", 44);
}

static int dispatch(uint8_t version, const uint8_t *body, size_t len) {
    switch (body[0]) {
    case 0x01: return outcome("ping", 10);
    case 0x02:
        if (len >= 3 && body[1] == body[2])
            return outcome("echo-pair", 11);
        return outcome("echo", 12);
    case 0x10: return op_set(body, len);
    case 0x20: return op_calc(body, len);
    case 0x7F: return op_admin(version, body, len);
    default: return outcome("unknown-op", 9);
    }
}

int main(int argc, char **argv) {
    uint8_t buf[HEADER + MAX_BODY];
    long n = read_input(argc, argv, buf, sizeof buf);
    if (n < HEADER + 1)
        return outcome("short", 1);
    if (buf[0] != 'S' || buf[1] != 'Q')
        return outcome("bad-magic", 2);
    if (buf[2] < 1 || buf[2] > 3)
        return outcome("bad-version", 3);
    size_t len = buf[3];
    if (len < 1 || len > MAX_BODY || len > (size_t)n - HEADER)
        return outcome("bad-length", 4);
    if (check_byte(buf + HEADER, len) != buf[4])
        return outcome("bad-checksum", 5);
    return dispatch(buf[2], buf + HEADER, len);
}
