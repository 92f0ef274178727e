package segments

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\rb\n\n", []string{"a\rb", ""}},
		{"\n\n", []string{"", ""}},
		{"x\r", []string{"x"}},
	} {
		got, err := Read(strings.NewReader(c.in), "test")
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Read(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	_, err := Read(io.MultiReader(strings.NewReader("a\n"), failing{}), "src.txt")
	if err == nil || !strings.Contains(err.Error(), "reading src.txt: disk gone") {
		t.Errorf("a failing reader: %v, want its error naming the file", err)
	}
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("disk gone") }
