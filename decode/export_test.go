package decode

// SetNextRow sets the id the next joined row gets, so that tests reach ids
// no test could join one by one.
func (e *Executor) SetNextRow(r RowID) { e.nextRow = r }

// SetMaxBindings bounds the binding cache to n entries.
func (e *Executor) SetMaxBindings(n int) { e.maxBindings = n }

// BindDecoder looks up (making it when missing) the decoder binding of b
// slots at source length s, parity 0.
func (e *Executor) BindDecoder(b, s int) error {
	_, err := e.binding(bindKey{kind: bindDecoder, b: int32(b), s: int32(s)})
	return err
}
