package main

import (
	"github.com/spf13/pflag"

	"github.com/attnx/attnx/translate"
)

// unkDictFlags are translate's dictionaries for --replace-unk:
// --replace-unk-dict (fairseq's --replace-unk DICT) and --phrase-table
// (OpenNMT-py's -phrase_table).
type unkDictFlags struct {
	alignDict, phraseTable *string
	dict                   translate.UnkDict // loaded by load
}

// add defines the flags on fs.
func (f *unkDictFlags) add(fs *pflag.FlagSet) {
	f.alignDict = fs.String("replace-unk-dict", "", "fairseq's --replace-unk `DICT`: replace each <unk> as --replace-unk does (which it turns on), writing DICT's target word for the source word where DICT has one (lines \"source target\")")
	f.phraseTable = fs.String("phrase-table", "", "OpenNMT-py's -phrase_table `FILE`: with --replace-unk, write FILE's target word for the source word where it has one (lines \"source|||target\")")
}

// load reads the dictionary a flag names into f.dict. --replace-unk-dict
// turns replaceUnk on, as fairseq's --replace-unk DICT does; --phrase-table
// needs it on (OpenNMT-py ignores -phrase_table without -replace_unk,
// attnx refuses a flag that would do nothing), and the two flags do not
// go together.
func (f *unkDictFlags) load(replaceUnk *bool) error {
	var err error
	switch {
	case *f.alignDict != "" && *f.phraseTable != "":
		return &usageError{"--replace-unk-dict and --phrase-table: give one dictionary (fairseq's or OpenNMT-py's)"}
	case *f.alignDict != "":
		*replaceUnk = true
		f.dict, err = translate.LoadAlignDict(*f.alignDict)
	case *f.phraseTable != "":
		if !*replaceUnk {
			return &usageError{"--phrase-table " + *f.phraseTable + ": needs --replace-unk (OpenNMT-py looks the table up only with -replace_unk)"}
		}
		f.dict, err = translate.LoadPhraseTable(*f.phraseTable)
	}
	if err != nil {
		return &usageError{err.Error()}
	}
	return nil
}
