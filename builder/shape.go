package builder

import "fmt"

// Broadcast returns the shape of a numpy-style multidirectional broadcast of
// the given shapes. An unknown rank anywhere gives an unknown result.
// Dimensions that are provably different and neither 1 are an error.
func Broadcast(shapes ...Shape) (Shape, error) {
	rank := 0
	for _, s := range shapes {
		if s == nil {
			return nil, nil
		}
		if len(s) > rank {
			rank = len(s)
		}
	}
	out := make(Shape, rank)
	for i := 0; i < rank; i++ {
		var d Dim
		set := false
		for _, s := range shapes {
			j := i - (rank - len(s))
			if j < 0 {
				continue
			}
			e := s[j]
			switch {
			case !set:
				d, set = e, true
			case e.Known() && e.Value == 1:
				// broadcasts to anything
			case d.Known() && d.Value == 1:
				d = e
			case d.Conflicts(e):
				return nil, fmt.Errorf("cannot broadcast shapes %v: dimension %d is %s in one and %s in another", shapes, i, d, e)
			case d.Same(e):
			case d.Known():
				// keep the fixed size: the other must equal it at run time
			case e.Known():
				d = e
			case d.Param == "" && e.Param != "":
				// an unknown dimension meets a named one: keep the name,
				// which is what any valid run of the graph has
				d = e
			case d.Param != "" && e.Param == "":
			default:
				d = UnknownDim()
			}
		}
		out[i] = d
	}
	return out, nil
}

// NormAxis turns a possibly negative axis into an index in [0, rank).
func NormAxis(axis int64, rank int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	return int(a), nil
}
