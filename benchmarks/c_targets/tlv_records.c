/* A type-length-value record stream with nested lists.
 *
 * Layout: 'T' 'V' | records until the input ends or a record of type 0 (end).
 * A record is: type (1 byte) | length (1 byte) | value[length].
 *   1 INT      value is a little-endian int32 (length must be 4)
 *   2 NAME     1..16 printable bytes
 *   3 LIST     value is itself a record stream (INT, NAME or LIST), nested at most 3 deep
 *   4 VERSION  one byte, 1 or 2; only as the first record
 * Prints the most notable thing it saw (or the error that stopped it); the exit code tells the same.
 * Reads stdin, or the file named by argv[1].
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "read_input.h"

enum { MAX_INPUT = 256, MAX_DEPTH = 3, MAX_RECORDS = 12 };

/* Outcomes, least notable first; the exit code is 10 + the index. */
enum outcome {
    EMPTY, INT_PLAIN, INT_NEGATIVE, INT_SMALL_RANGE, INT_BIG, NAME_PLAIN, NAME_ADMIN_V1, NAME_ADMIN_V2,
    LIST_PLAIN, LIST_NESTED, LIST_SUM_1234, LIST_DEEP_SUM, N_OUTCOMES
};

static const char *const WORDS[N_OUTCOMES] = {
    "empty", "int", "int-negative", "int-small-range", "int-big", "name", "name-admin-v1",
    "name-admin-v2", "list", "list-nested", "list-sum-1234", "list-deep-sum",
};

struct state {
    int version;
    int records;
    enum outcome best;
};

struct list_total {
    int count;
    int32_t sum;
};

static int fail(const char *word, int code) {
    puts(word);
    return code;
}

static void saw(struct state *st, enum outcome o) {
    if (o > st->best)
        st->best = o;
}

static int32_t le32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int on_int(struct state *st, const uint8_t *v, size_t len, struct list_total *tot) {
    if (len != 4)
        return fail("int-bad-length", 5);
    int32_t x = le32(v);
    if (x < 0)
        saw(st, INT_NEGATIVE);
    else if (x >= 100 && x <= 200)
        saw(st, INT_SMALL_RANGE);
    else if (x > 1000000)
        saw(st, INT_BIG);
    else
        saw(st, INT_PLAIN);
    if (tot) {
        tot->count++;
        tot->sum += x;
    }
    return 0;
}

static int on_name(struct state *st, const uint8_t *v, size_t len) {
    if (len < 1 || len > 16)
        return fail("name-bad-length", 6);
    for (size_t i = 0; i < len; i++)
        if (v[i] < 0x20 || v[i] > 0x7E)
            return fail("name-not-printable", 7);
    if (len == 5 && memcmp(v, "admin", 5) == 0)
        saw(st, st->version == 2 ? NAME_ADMIN_V2 : NAME_ADMIN_V1);
    else
        saw(st, NAME_PLAIN);
    return 0;
}

static int parse(struct state *st, const uint8_t *p, size_t n, int depth, struct list_total *tot);

static int on_list(struct state *st, const uint8_t *v, size_t len, int depth) {
    if (depth >= MAX_DEPTH)
        return fail("list-too-deep", 8);
    struct list_total inner = {0, 0};
    int err = parse(st, v, len, depth + 1, &inner);
    if (err)
        return err;
    saw(st, depth > 0 ? LIST_NESTED : LIST_PLAIN);
    if (inner.count >= 3 && inner.sum == 1234 && st->version == 2)
        saw(st, depth > 0 ? LIST_DEEP_SUM : LIST_SUM_1234);
    return 0;
}

static int on_record(struct state *st, uint8_t type, const uint8_t *v, size_t len, int depth,
                     struct list_total *tot) {
    switch (type) {
    case 1: return on_int(st, v, len, tot);
    case 2: return on_name(st, v, len);
    case 3: return on_list(st, v, len, depth);
    case 4:
        if (depth > 0 || st->records != 1)
            return fail("version-misplaced", 9);
        if (len != 1 || v[0] < 1 || v[0] > 2)
            return fail("bad-version", 4);
        st->version = v[0];
        return 0;
    default: return fail("bad-type", 3);
    }
}

static int parse(struct state *st, const uint8_t *p, size_t n, int depth, struct list_total *tot) {
    size_t at = 0;
    while (at < n && p[at] != 0) {
        if (++st->records > MAX_RECORDS)
            return fail("too-many-records", 2);
        if (n - at < 2 || p[at + 1] > n - at - 2)
            return fail("truncated", 1);
        int err = on_record(st, p[at], p + at + 2, p[at + 1], depth, tot);
        if (err)
            return err;
        at += 2 + (size_t)p[at + 1];
    }
    return 0;
}

int main(int argc, char **argv) {
    uint8_t buf[MAX_INPUT];
    long n = read_input(argc, argv, buf, sizeof buf);
    if (n < 2 || buf[0] != 'T' || buf[1] != 'V')
        return fail("bad-magic", 60);
    struct state st = {1, 0, EMPTY};
    int err = parse(&st, buf + 2, (size_t)n - 2, 0, NULL);
    if (err)
        return err;
    puts(WORDS[st.best]);
    return 10 + (int)st.best;
}
