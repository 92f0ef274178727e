package onmttok_test

import (
	"fmt"

	"github.com/attnx/attnx/onmttok"
)

// A tokenizer of the options OpenNMT-py's documentation gives
// -src_onmttok_kwargs, as a configuration writes them.
func Example() {
	kw, err := onmttok.ParseKwargs("{'mode': 'aggressive', 'joiner_annotate': True, 'case_markup': True, 'segment_numbers': True}")
	if err != nil {
		panic(err)
	}
	o, err := onmttok.FromKwargs(kw)
	if err != nil {
		panic(err)
	}
	tok, err := onmttok.New(o, nil)
	if err != nil {
		panic(err)
	}
	tokens := tok.Tokenize("Hello WORLD, it's 2024!")
	fmt.Println(tokens)
	fmt.Println(tok.Detokenize(tokens))
	// Output:
	// [｟mrk_case_modifier_C｠ hello ｟mrk_begin_case_region_U｠ world ｟mrk_end_case_region_U｠ ￭, it ￭'￭ s 2￭ 0￭ 2￭ 4 ￭!]
	// Hello WORLD, it's 2024!
}
