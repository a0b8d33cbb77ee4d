/* cJSON_ParseWithLengthOpts on one JSON text (stdin, or the file named by argv[1]).
 *
 * A parsed document is printed unformatted, parsed again, duplicated and compared with the
 * original. Prints one line: "ok" with the root's type, the nesting depth (capped at 4), the set
 * of item types seen and whether the round trip compared equal, exit 0; or "error" with the
 * class of the character cJSON stopped at, exit 1; exit 2 when the input cannot be read.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "cJSON.h"
#include "../read_input.h"

enum { INPUT_CAP = 1 << 16, MAX_DEPTH_SHOWN = 4 };

static const char *root_type(const cJSON *item) {
    if (cJSON_IsObject(item)) return "object";
    if (cJSON_IsArray(item)) return "array";
    if (cJSON_IsString(item)) return "string";
    if (cJSON_IsNumber(item)) return "number";
    if (cJSON_IsBool(item)) return "bool";
    if (cJSON_IsNull(item)) return "null";
    return "other";
}

/* The depth below item; types collects each item's type bits (cJSON's type & 0xff). */
static int walk(const cJSON *item, unsigned *types) {
    int deepest = 0;
    for (const cJSON *child = item->child; child; child = child->next) {
        *types |= (unsigned)child->type & 0xffu;
        int d = 1 + walk(child, types);
        if (d > deepest)
            deepest = d;
    }
    return deepest;
}

static const char *error_class(const char *at, const char *end) {
    if (!at || at >= end) return "end";
    unsigned char c = (unsigned char)*at;
    if (isdigit(c) || c == '-' || c == '+' || c == '.') return "number";
    if (c == '"' || c == '\\') return "string";
    if (c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',') return "structure";
    if (isalpha(c)) return "word";
    if (isspace(c)) return "space";
    if (c == 0) return "nul";
    return "other";
}

int main(int argc, char **argv) {
    static char buf[INPUT_CAP + 1];
    long n = read_input(argc, argv, (uint8_t *)buf, INPUT_CAP);
    if (n < 0)
        return 2;
    buf[n] = 0;
    const char *stop = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, (size_t)n, &stop, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        printf("error %s\n", error_class(at, buf + n));
        return 1;
    }
    unsigned types = (unsigned)root->type & 0xffu;
    int depth = walk(root, &types);
    char *text = cJSON_PrintUnformatted(root);
    cJSON *again = text ? cJSON_Parse(text) : NULL;
    cJSON *copy = cJSON_Duplicate(root, 1);
    int same = again && copy && cJSON_Compare(root, again, 1) && cJSON_Compare(root, copy, 0);
    printf("ok %s depth=%d types=%#x roundtrip=%d\n", root_type(root), depth > MAX_DEPTH_SHOWN ? MAX_DEPTH_SHOWN : depth,
           types, same);
    cJSON_Delete(copy);
    cJSON_Delete(again);
    free(text);
    cJSON_Delete(root);
    return 0;
}
