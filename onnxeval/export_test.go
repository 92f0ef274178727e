package onnxeval

// SetFusion turns plan-time fusion on or off for the models opened after
// it (tests compare fused and unfused plans).
func SetFusion(on bool) { fusionOff = !on }

// OpsDeep lists the operators of every step of the model's plans, Loop
// bodies included.
func (m *Model) OpsDeep() []string {
	var out []string
	var walk func(p *plan)
	walk = func(p *plan) {
		for _, st := range p.steps {
			out = append(out, st.op)
			if st.body != nil {
				walk(st.body)
			}
		}
	}
	walk(m.main)
	return out
}

// Float32Data is t's data when it is float32.
func Float32Data(t *Tensor) ([]float32, bool) {
	d, ok := t.Data.([]float32)
	return d, ok
}
