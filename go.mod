module github.com/attnx/attnx

go 1.26.8

require (
	github.com/nlpodyssey/gopickle v0.2.0 // indirect
	github.com/yalue/onnxruntime_go v1.27.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
