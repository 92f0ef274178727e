# image builds the static image with ko, one tarball per platform under
# out/image (scripts/ko-build.sh; .ko.yaml says what goes in it).
.PHONY: image
image: deps
	@scripts/ko-build.sh
