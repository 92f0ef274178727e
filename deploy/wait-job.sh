#!/usr/bin/env bash
# wait-job.sh JOB [TIMEOUT [KUBECTL-ARGS...]] waits for the Kubernetes Job
# JOB to finish, whichever way: it exits 0 as soon as the Job is complete,
# 1 as soon as it has failed (every index of an Indexed Job has finished
# and some ran out of retries, or the Job hit its backoff or deadline), and
# 2 when TIMEOUT (default 24h) passes first or kubectl cannot watch it.
# `kubectl wait --for=condition=complete` alone waits the whole TIMEOUT
# for a Job that failed; this runs it beside a wait for condition=failed
# and stops at the first that holds (kubectl 1.11 or later). KUBECTL-ARGS
# (-n NAMESPACE, --context C) go to both; KUBECTL names another kubectl.
#
#   deploy/wait-job.sh attnx-translate 24h -n mt && kubectl apply -k deploy/merge -n mt
set -uo pipefail
if [ $# -lt 1 ]; then
	echo "usage: wait-job.sh JOB [TIMEOUT [KUBECTL-ARGS...]]" >&2
	exit 2
fi
job=$1
timeout=${2:-24h}
shift $(($# < 2 ? $# : 2))
kubectl=${KUBECTL:-kubectl}
"$kubectl" wait --for=condition=complete --timeout="$timeout" "job/$job" "$@" >/dev/null &
complete=$!
"$kubectl" wait --for=condition=failed --timeout="$timeout" "job/$job" "$@" >/dev/null &
failed=$!
trap 'kill $complete $failed 2>/dev/null' EXIT
done_complete='' done_failed=''
while :; do
	if [ -z "$done_complete" ] && ! kill -0 "$complete" 2>/dev/null; then
		if wait "$complete"; then
			echo "wait-job: job/$job is complete" >&2
			exit 0
		fi
		done_complete=1
	fi
	if [ -z "$done_failed" ] && ! kill -0 "$failed" 2>/dev/null; then
		if wait "$failed"; then
			echo "wait-job: job/$job failed: kubectl describe job/$job $* names the indexes and pods" >&2
			exit 1
		fi
		done_failed=1
	fi
	if [ -n "$done_complete" ] && [ -n "$done_failed" ]; then
		echo "wait-job: job/$job neither complete nor failed within $timeout (or kubectl could not watch it: see its errors above)" >&2
		exit 2
	fi
	sleep 1
done
