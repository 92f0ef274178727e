/* Writes what the OpenNMT Tokenizer asks ICU about each code point (its
 * general category, simple case mappings, script and script extensions)
 * and ICU's script names, for gen.go; then what ICU's language-specific
 * string casing (UnicodeString::toLower/toUpper/toTitle with a locale)
 * reads of each code point: its case properties, combining class and
 * full (root) case mappings, and the canonical decompositions of the
 * Greek letters. Build: cc icudump.c -licuuc. */
#include <stdio.h>
#include <unicode/uchar.h>
#include <unicode/uscript.h>
#include <unicode/uvernum.h>
#include <unicode/ucasemap.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

/* Prints " X:" and the string's code points in hex joined by '.', or
 * nothing when it is the one code point simple. */
static void mapping(char tag, const UChar *s, int32_t n, UChar32 simple) {
  UChar32 c;
  int32_t i = 0;
  U16_NEXT(s, i, n, c);
  if (i == n && c == simple)
    return;
  printf(" %c:", tag);
  for (i = 0; i < n;) {
    U16_NEXT(s, i, n, c);
    printf(i == n ? "%X" : "%X.", c);
  }
}

int main(void) {
  printf("V %s %s\n", U_ICU_VERSION, U_UNICODE_VERSION);
  for (UChar32 c = 0; c <= 0x10FFFF; c++) {
    UErrorCode e = U_ZERO_ERROR;
    UScriptCode s = uscript_getScript(c, &e);
    UScriptCode ext[USCRIPT_CODE_LIMIT];
    e = U_ZERO_ERROR;
    int n = uscript_getScriptExtensions(c, ext, USCRIPT_CODE_LIMIT, &e);
    printf("%X %d %X %X %d", c, u_charType(c), u_tolower(c), u_toupper(c), s);
    for (int i = 0; i < n; i++)
      printf(" %d", ext[i]);
    printf("\n");
  }
  for (int i = 0; i < USCRIPT_CODE_LIMIT; i++)
    printf("S %d %s %s\n", i, uscript_getName(i), uscript_getShortName(i));
  /* K code flags ccc simple-title [L:lower] [U:upper] [T:title]; flags:
   * 1 cased, 2 case-ignorable, 4 soft-dotted. Full mappings are the root locale's
   * of the code point alone (no context), given where they are not the
   * simple mapping. */
  UErrorCode e = U_ZERO_ERROR;
  UCaseMap *title = ucasemap_open("", U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_BREAK_ADJUSTMENT | U_TITLECASE_NO_LOWERCASE, &e);
  const UNormalizer2 *nfd = unorm2_getNFDInstance(&e);
  if (U_FAILURE(e)) {
    fprintf(stderr, "icudump: %s\n", u_errorName(e));
    return 1;
  }
  for (UChar32 c = 0; c <= 0x10FFFF; c++) {
    if (U_IS_SURROGATE(c))
      continue;
    int flags = u_hasBinaryProperty(c, UCHAR_CASED) | u_hasBinaryProperty(c, UCHAR_CASE_IGNORABLE) << 1 |
                u_hasBinaryProperty(c, UCHAR_SOFT_DOTTED) << 2;
    int ccc = u_getCombiningClass(c);
    UChar src[2], lo[8], up[8], ti[8];
    int32_t n = 0;
    U16_APPEND_UNSAFE(src, n, c);
    e = U_ZERO_ERROR;
    int32_t nl = u_strToLower(lo, 8, src, n, "", &e);
    int32_t nu = u_strToUpper(up, 8, src, n, "", &e);
    int32_t nt = ucasemap_toTitle(title, ti, 8, src, n, &e);
    if (U_FAILURE(e)) {
      fprintf(stderr, "icudump: U+%04X: %s\n", c, u_errorName(e));
      return 1;
    }
    int same = nl == n && nu == n && nt == n && u_memcmp(lo, src, n) == 0 && u_memcmp(up, src, n) == 0 &&
               u_memcmp(ti, src, n) == 0 && u_totitle(c) == c;
    if (flags == 0 && ccc == 0 && same)
      continue;
    printf("K %X %d %d %X", c, flags, ccc, u_totitle(c));
    mapping('L', lo, nl, u_tolower(c));
    mapping('U', up, nu, u_toupper(c));
    mapping('T', ti, nt, u_totitle(c));
    printf("\n");
  }
  for (UChar32 c = 0x370; c <= 0x2126; c++) {
    if (c == 0x400)
      c = 0x1F00;
    else if (c == 0x2000)
      c = 0x2126;
    UChar src[2], d[8];
    int32_t n = 0;
    U16_APPEND_UNSAFE(src, n, c);
    e = U_ZERO_ERROR;
    int32_t nd = unorm2_normalize(nfd, src, n, d, 8, &e);
    if (U_SUCCESS(e) && (nd != n || u_memcmp(d, src, n) != 0)) {
      printf("G %X", c);
      mapping('N', d, nd, -1);
      printf("\n");
    }
  }
  ucasemap_close(title);
  return 0;
}
