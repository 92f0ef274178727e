package decode

import (
	"fmt"
	"math"
)

// Ranges of the decoding settings, checked where each surface parses them
// (command-line flags, HTTP fields, attnx.json, Go options) by the same
// functions, so that a value one surface accepts every other accepts.
const (
	// MaxLengthPenalty bounds a length penalty's exponent (alpha; fairseq's
	// lenpen): len ** alpha, or ((5 + len) / 6) ** alpha, already passes
	// float32's range at 10 for outputs of 10^4 tokens, and a score
	// divided by an infinite penalty is 0 or NaN.
	MaxLengthPenalty = 10
	// MinTemperature and MaxTemperature bound fairseq's --temperature
	// (0: none): the logits are divided by it, and by 10^-40 they are
	// infinite and every log-prob NaN.
	MinTemperature = 1e-3
	MaxTemperature = 1e3
)

// LengthPenaltyRange reports a length penalty outside [0,
// MaxLengthPenalty] with the allowed range, for the caller to prefix
// with the setting's name.
func LengthPenaltyRange(a float64) error {
	if math.IsNaN(a) || a < 0 || a > MaxLengthPenalty {
		return fmt.Errorf("want a finite value from 0 to %d", MaxLengthPenalty)
	}
	return nil
}

// TemperatureRange reports a temperature that is neither 0 (none) nor in
// [MinTemperature, MaxTemperature].
func TemperatureRange(t float64) error {
	if t != 0 && !(t >= MinTemperature && t <= MaxTemperature) {
		return fmt.Errorf("want 0 (none) or a value from %g to %g", float64(MinTemperature), float64(MaxTemperature))
	}
	return nil
}
