/* libpng's sequential reader on one PNG held in memory (stdin, or the file named by argv[1]).
 *
 * The image is decoded with the common transformations (palette and low bit depths expanded,
 * 16-bit stripped, interlacing handled), then the chunks after the image data are read. Images
 * wider or taller than 256 pixels are refused (png_set_user_limits), warnings are ignored.
 * Prints one line: "ok" with the colour type, bit depth, interlace method and the bit set of
 * png_get_valid (which ancillary chunks were accepted), exit 0; or "error" with libpng's
 * message (a leading chunk name removed, so that each unknown chunk is not its own outcome),
 * exit 1; exit 2 when the input cannot be read.
 */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../read_input.h"

enum { INPUT_CAP = 1 << 16, MAX_SIDE = 256 };

struct memory {
    const uint8_t *data;
    size_t len, pos;
};

static char message[128];

static void read_memory(png_structp png, png_bytep out, size_t n) {
    struct memory *in = png_get_io_ptr(png);
    if (n > in->len - in->pos)
        png_error(png, "input ends early");
    memcpy(out, in->data + in->pos, n);
    in->pos += n;
}

static void keep_error(png_structp png, png_const_charp text) {
    /* png_chunk_error prefixes the chunk's name: "abcD: message". */
    const char *rest = text;
    if (strlen(text) > 6 && text[4] == ':' && text[5] == ' ')
        rest = text + 6;
    snprintf(message, sizeof message, "%s", rest);
    png_longjmp(png, 1);
}

static void ignore_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;
}

int main(int argc, char **argv) {
    static uint8_t buf[INPUT_CAP];
    long n = read_input(argc, argv, buf, sizeof buf);
    if (n < 0)
        return 2;
    struct memory in = {buf, (size_t)n, 0};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, keep_error, ignore_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info)
        return 2;
    png_bytep pixels = NULL;
    png_bytepp rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        printf("error %s\n", message);
        free(rows);
        free(pixels);
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    png_set_user_limits(png, MAX_SIDE, MAX_SIDE);
    png_set_chunk_malloc_max(png, 1 << 20);
    png_set_read_fn(png, &in, read_memory);
    png_read_info(png, info);
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    int interlace = png_get_interlace_type(png, info);
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    png_uint_32 height = png_get_image_height(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    pixels = malloc(rowbytes * height + 1);
    rows = malloc(sizeof *rows * (height + 1));
    if (!pixels || !rows)
        png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < height; y++)
        rows[y] = pixels + y * rowbytes;
    png_read_image(png, rows);
    png_read_end(png, info);
    printf("ok color=%d depth=%d interlace=%d valid=%#x\n", color, depth, interlace,
           (unsigned)png_get_valid(png, info, 0xffffffffu));
    free(rows);
    free(pixels);
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}
