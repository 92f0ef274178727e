/* Writes what the OpenNMT Tokenizer asks ICU about each code point (its
 * general category, simple case mappings, script and script extensions)
 * and ICU's script names, for gen.go. Build: cc icudump.c -licuuc. */
#include <stdio.h>
#include <unicode/uchar.h>
#include <unicode/uscript.h>
#include <unicode/uvernum.h>

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
  return 0;
}
