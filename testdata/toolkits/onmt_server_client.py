"""Sends each request of requests.json to a running REST server
(OpenNMT-py's onmt/bin/server.py, or attnx serve --onmt-config) and writes
the exchanges, the answers byte for byte, as JSON:

    /usr/bin/python3 onmt_server_client.py http://127.0.0.1:5000 requests.json exchanges.json

Each request is {"name", "method", "path", and "json" (a value sent as
JSON) or "body" (a string sent as it is)}; each exchange adds "status",
"content_type" and "response" (the answer's body as text).
"""
import json
import sys
import urllib.error
import urllib.request


def send(base, req):
    data = None
    if "json" in req:
        data = json.dumps(req["json"]).encode()
    elif "body" in req:
        data = req["body"].encode()
    r = urllib.request.Request(base + req["path"], data=data, method=req["method"])
    if data is not None:
        r.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(r, timeout=120) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def main():
    base, reqs, out = sys.argv[1:4]
    with open(reqs) as f:
        requests = json.load(f)
    exchanges = []
    for req in requests:
        status, ctype, body = send(base, req)
        exchanges.append(dict(req, status=status, content_type=ctype, response=body))
    with open(out, "w") as f:
        json.dump(exchanges, f, indent=1, ensure_ascii=False)
        f.write("\n")


main()
