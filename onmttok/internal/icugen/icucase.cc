// icucase case-maps text with ICU as the OpenNMT Tokenizer 1.37.1 does
// with a lang (src/Casing.cc): icu::UnicodeString's toLower(locale),
// toUpper(locale) and toTitle(nullptr, locale, U_TITLECASE_WHOLE_STRING).
// Each input line is LANG<TAB>OP<TAB>TEXT, OP one of lower, upper, title;
// each output line is the mapped TEXT. With an argument it prints ICU's
// version. TestCasingMatchesICU runs it. Build: c++ icucase.cc -licuuc.
#include <iostream>
#include <string>
#include <unicode/locid.h>
#include <unicode/stringoptions.h>
#include <unicode/unistr.h>
#include <unicode/uvernum.h>

int main(int argc, char **argv) {
  if (argc > 1) {
    std::cout << U_ICU_VERSION << "\n";
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    size_t a = line.find('\t'), b = line.find('\t', a + 1);
    if (a == std::string::npos || b == std::string::npos) {
      std::cerr << "icucase: want LANG<TAB>OP<TAB>TEXT, got: " << line << "\n";
      return 1;
    }
    std::string lang = line.substr(0, a), op = line.substr(a + 1, b - a - 1), text = line.substr(b + 1);
    icu::Locale locale(lang.c_str());
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
    if (op == "lower")
      u.toLower(locale);
    else if (op == "upper")
      u.toUpper(locale);
    else if (op == "title")
      u.toTitle(nullptr, locale, U_TITLECASE_WHOLE_STRING);
    else {
      std::cerr << "icucase: unknown operation " << op << " (want lower, upper or title)\n";
      return 1;
    }
    std::string out;
    u.toUTF8String(out);
    std::cout << out << "\n";
  }
  return 0;
}
