// gen.mjs classifies the ONNX backend test cases with ONNX Runtime's own
// Node.js binding (onnxruntime-node), independently of attnx's Go code, and
// writes the expected-failure list that `attnx conformance` checks against.
//
// Run it through `make conformance-expected` (scripts/gen-conformance-expected.sh),
// which installs the pinned npm packages of package-lock.json into a
// temporary directory. By hand:
//
//	node gen.mjs --data /usr/share/libonnx-testdata/data \
//	    --proto-dir /usr/lib/python3/dist-packages/onnx \
//	    --manual manual.tsv --out failures.tsv
//
// For each case (a directory with model.onnx and test_data_set_N/) it
// parses the model and the .pb files with protobufjs and Debian's
// onnx-ml.proto and onnx-data.proto, creates an ORT session from the
// original model.onnx, runs every data set and compares each output with
// output_N.pb: same element type and shape; floats (float16 widened to
// float32) within |got-want| <= atol + rtol*|want| (numpy's allclose, NaN
// equal to NaN); integers, bools and strings exactly. A case fails at the
// first of these stages that goes wrong:
//
//	load     ORT cannot create a session for the model
//	run      ORT rejects the inputs or fails while running
//	compare  an output is missing or differs from the expected one
//	feed     the Go binding cannot feed or read a value of the case
//
// "feed" is a static rule, not an ORT result: the Go binding
// (onnxruntime_go) has no optional or map values and cannot create an empty
// sequence, so those cases cannot run through attnx whatever ORT does (the
// JS binding cannot feed them either).
//
// The JS binding cannot feed sequences at all, nor bfloat16 tensors: cases
// with such inputs or outputs are "not runnable here". They are expected
// to pass unless manual.tsv classifies them, by hand, with the evidence
// written next to each entry; a manual entry for a case that runs here is
// an error, so the hand-made part stays as small as the binding allows.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import ort from 'onnxruntime-node';
import protobuf from 'protobufjs';

const args = {
  data: '/usr/share/libonnx-testdata/data',
  folders: 'node,pytorch-converted,pytorch-operator,simple',
  'proto-dir': '/usr/lib/python3/dist-packages/onnx',
  manual: path.join(path.dirname(new URL(import.meta.url).pathname), 'manual.tsv'),
  out: '',
  rtol: '1e-3',
  atol: '1e-7',
  match: '',
};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--?/, '');
  if (!(k in args) || i + 1 >= process.argv.length) {
    console.error(`gen.mjs: unknown flag or missing value: ${process.argv[i]}\nflags: ${Object.keys(args).map((a) => '--' + a).join(' ')}`);
    process.exit(2);
  }
  args[k] = process.argv[i + 1];
}
const rtol = Number(args.rtol);
ort.env.logLevel = 'fatal'; // failures are caught and classified, not logged
const atol = Number(args.atol);

// --- protobuf ---------------------------------------------------------------
const root = new protobuf.Root();
root.resolvePath = (origin, target) => {
  const base = path.basename(target);
  if (target.startsWith('onnx/') || !origin) return path.join(args['proto-dir'], base);
  return path.resolve(path.dirname(origin), target);
};
root.loadSync(['onnx-ml.proto', 'onnx-data.proto'], { keepCase: true });
const ModelProto = root.lookupType('onnx.ModelProto');
const TensorProto = root.lookupType('onnx.TensorProto');
const SequenceProto = root.lookupType('onnx.SequenceProto');
const DT = root.lookupEnum('onnx.TensorProto.DataType').values;

// ORT's JS tensor type for each ONNX element type it can hold.
const ortType = {
  [DT.FLOAT]: 'float32', [DT.DOUBLE]: 'float64', [DT.FLOAT16]: 'float16',
  [DT.INT8]: 'int8', [DT.UINT8]: 'uint8', [DT.INT16]: 'int16', [DT.UINT16]: 'uint16',
  [DT.INT32]: 'int32', [DT.UINT32]: 'uint32', [DT.INT64]: 'int64', [DT.UINT64]: 'uint64',
  [DT.BOOL]: 'bool', [DT.STRING]: 'string',
};
const typedArray = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array, int8: Int8Array,
  uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array, int32: Int32Array,
  uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
};
const dtName = Object.fromEntries(Object.entries(DT).map(([k, v]) => [v, k]));

const toBig = (v) => BigInt(typeof v === 'object' && v !== null ? v.toString() : v);

// tensorFromProto turns a TensorProto into an ort.Tensor, or throws when the
// JS binding has no type for it.
function tensorFromProto(tp) {
  const type = ortType[tp.data_type];
  if (!type) throw new NotRunnable(`a ${dtName[tp.data_type] ?? tp.data_type} tensor ${JSON.stringify(tp.name)}`);
  const dims = tp.dims.map((d) => Number(toBig(d)));
  const n = dims.reduce((a, b) => a * b, 1);
  if (tp.data_location === 1) throw new Error('external tensor data is not supported');
  if (type === 'string') {
    return new ort.Tensor('string', tp.string_data.map((b) => Buffer.from(b).toString('utf8')), dims);
  }
  const TA = typedArray[type];
  let data;
  if (tp.raw_data && tp.raw_data.length > 0) {
    const bytes = new Uint8Array(tp.raw_data); // copy: aligned
    data = new TA(bytes.buffer, 0, bytes.length / TA.BYTES_PER_ELEMENT);
  } else {
    let src;
    switch (tp.data_type) {
      case DT.FLOAT: src = tp.float_data; break;
      case DT.DOUBLE: src = tp.double_data; break;
      case DT.INT64: src = tp.int64_data.map(toBig); break;
      case DT.UINT32: src = tp.uint64_data.map((v) => Number(toBig(v))); break;
      case DT.UINT64: src = tp.uint64_data.map((v) => BigInt.asUintN(64, toBig(v))); break;
      default: src = tp.int32_data; // int8..int32, uint8, uint16, bool, float16 bits
    }
    data = TA.from(src);
  }
  if (data.length !== n) throw new Error(`tensor ${tp.name}: ${data.length} values for shape [${dims}]`);
  return new ort.Tensor(type, data, dims);
}

class NotRunnable extends Error {}

// --- comparison ---------------------------------------------------------------
function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

// compare returns '' when got matches want, else what differs.
function compare(got, want) {
  if (got.type !== want.type) return `element type ${got.type}, want ${want.type}`;
  if (got.dims.length !== want.dims.length || got.dims.some((d, i) => d !== want.dims[i])) {
    return `shape [${got.dims}], want [${want.dims}]`;
  }
  const float = ['float32', 'float64', 'float16'].includes(got.type);
  let bad = 0, first = -1;
  for (let i = 0; i < want.data.length; i++) {
    let g = got.data[i], w = want.data[i];
    let ok;
    if (float) {
      if (got.type === 'float16') { g = halfToFloat(g); w = halfToFloat(w); }
      ok = (Number.isNaN(g) && Number.isNaN(w)) || g === w || Math.abs(g - w) <= atol + rtol * Math.abs(w);
    } else {
      ok = g === w;
    }
    if (!ok) { bad++; if (first < 0) first = i; }
  }
  if (bad === 0) return '';
  return `${bad} of ${want.data.length} values differ, first at flat index ${first} (got ${got.data[first]}, want ${want.data[first]})`;
}

// --- classification -------------------------------------------------------------
// Random operators: their outputs cannot match data drawn by another generator.
const randomOps = new Set(['Bernoulli', 'RandomUniform', 'RandomUniformLike', 'RandomNormal', 'RandomNormalLike', 'Multinomial']);

function isRandom(model) {
  const nodes = [];
  const walk = (g) => {
    for (const n of g.node) {
      nodes.push(n);
      for (const a of n.attribute) {
        if (a.g) walk(a.g);
        for (const sg of a.graphs ?? []) walk(sg);
      }
    }
  };
  walk(model.graph);
  // Dropout with a training_mode input draws its mask at random.
  return nodes.some((n) => randomOps.has(n.op_type) || (n.op_type === 'Dropout' && n.input.length >= 3 && n.input[2] !== ''));
}

// category names an ORT failure for the list; short and stable.
function category(stage, msg, model) {
  if (/Failed to construct locale/.test(msg)) return 'missing-locale';
  if (stage === 'load') {
    if (/Could not find an implementation for/.test(msg)) return 'no-kernel';
    if (/is not a registered function\/op/.test(msg)) return 'unregistered-op';
    if (/layout == 1|Batchwise recurrent/.test(msg)) return 'unsupported-attribute';
    return 'ort-load-error';
  }
  if (stage === 'run') {
    if (/Got invalid dimensions|Invalid rank|Unexpected input data type/.test(msg)) return 'data-does-not-fit';
    return 'ort-run-error';
  }
  return isRandom(model) ? 'random-output' : 'ort-differs';
}

// condition says when an entry applies: '-' always; 'locale-missing:L'
// only while the C++ locale L cannot be created (ORT's message names it);
// 'random' for outputs drawn at random, which may match by chance.
function condition(msg, cat) {
  const m = /Failed to construct locale with name:([^:]+):/.exec(msg);
  if (m) return `locale-missing:${m[1]}`;
  return cat === 'random-output' ? 'random' : '-';
}

const oneLine = (s) => String(s).split('\n')[0].replace(/\t/g, ' ').replace(/\s+/g, ' ').trim();

// shortReason drops ORT's source locations, C++ signatures and advice.
function shortReason(msg) {
  let s = oneLine(msg);
  s = s.replace(/^.*?(Could not find an implementation)/, '$1');
  s = s.replace(/^.*?Fatal error: /, '');
  s = s.replace(/^.*?(Failed to construct locale with name:[^:]+):.*$/, '$1');
  s = s.replace(/^.*?(Batchwise recurrent operations \(layout == 1\) are not supported)\..*$/, '$1');
  s = s.replace(/^Error running network: /, '');
  return s.length > 240 ? s.slice(0, 237) + '...' : s;
}

function readPB(type, file) {
  return type.decode(fs.readFileSync(file));
}

function valueKind(t) {
  if (!t) return 'tensor';
  if (t.tensor_type) return 'tensor';
  if (t.sequence_type) return 'sequence';
  if (t.optional_type) return 'optional';
  if (t.map_type) return 'map';
  if (t.sparse_tensor_type) return 'sparse tensor';
  return 'tensor';
}

// classify runs one case. It returns {status, ...}: 'pass' or 'fail' from
// ORT, 'static' for a failure found without running ORT (the Go binding's
// limits, test data that contradicts the model), or 'unrunnable'.
async function classify(dir) {
  const model = readPB(ModelProto, path.join(dir, 'model.onnx'));
  const inits = new Set(model.graph.initializer.map((t) => t.name));
  const ins = model.graph.input.filter((v) => !inits.has(v.name));
  const outs = model.graph.output;
  const sets = fs.readdirSync(dir).filter((d) => /^test_data_set_\d+$/.test(d)).sort();
  if (sets.length === 0) return { status: 'static', stage: 'data', category: 'no-data', reason: 'no test_data_set_N directories' };

  // Static rules: what the Go binding cannot feed or read.
  for (const [kind, vs] of [['input', ins], ['output', outs]]) {
    for (const v of vs) {
      const k = valueKind(v.type);
      if (k === 'optional' || k === 'map' || k === 'sparse tensor') {
        return { status: 'static', stage: 'feed', category: `binding-${k.replace(' ', '-')}`,
          reason: `${kind} ${JSON.stringify(v.name)} is ${k === 'optional' ? 'an' : 'a'} ${k}, which the Go binding (onnxruntime_go) cannot ${kind === 'input' ? 'feed' : 'read'}` };
      }
    }
  }
  for (const s of sets) {
    for (const [k, v] of ins.entries()) {
      const f = path.join(dir, s, `input_${k}.pb`);
      if (valueKind(v.type) === 'sequence' && fs.existsSync(f) && readPB(SequenceProto, f).tensor_values.length === 0) {
        return { status: 'static', stage: 'feed', category: 'binding-empty-sequence',
          reason: `input ${JSON.stringify(v.name)} is an empty sequence in ${s}, which the Go binding (onnxruntime_go) cannot create` };
      }
    }
  }

  // What the JS binding cannot run at all: only a static check of the
  // input shapes is possible then.
  for (const v of [...ins, ...outs]) {
    const k = valueKind(v.type);
    const et = v.type?.tensor_type?.elem_type;
    let why = '';
    if (k !== 'tensor') why = `a ${k} ${JSON.stringify(v.name)}`;
    else if (et !== undefined && !ortType[et]) why = `a ${dtName[et]} tensor ${JSON.stringify(v.name)}`;
    if (why) return misfit(dir, sets, ins, why) ?? { status: 'unrunnable', reason: why };
  }

  let sess;
  try {
    sess = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), { intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 4 });
  } catch (e) {
    return { status: 'fail', stage: 'load', msg: e.message };
  }
  try {
    for (const s of sets) {
      const feeds = {};
      for (let k = 0; ; k++) {
        const f = path.join(dir, s, `input_${k}.pb`);
        if (!fs.existsSync(f)) break;
        if (k >= sess.inputNames.length) {
          return { status: 'fail', stage: 'run', category: 'data-does-not-fit', reason: `${s}: input_${k}.pb but the model has ${sess.inputNames.length} inputs` };
        }
        feeds[sess.inputNames[k]] = tensorFromProto(readPB(TensorProto, f));
      }
      let got;
      try {
        got = await sess.run(feeds);
      } catch (e) {
        return { status: 'fail', stage: 'run', msg: `${s}: ${e.message}` };
      }
      for (let k = 0; ; k++) {
        const f = path.join(dir, s, `output_${k}.pb`);
        if (!fs.existsSync(f)) break;
        const name = sess.outputNames[k];
        if (name === undefined || !got[name]) return { status: 'fail', stage: 'compare', msg: `${s}: no output ${k}` };
        const diff = compare(got[name], tensorFromProto(readPB(TensorProto, f)));
        if (diff) return { status: 'fail', stage: 'compare', msg: `${s}: output ${k} ${JSON.stringify(name)}: ${diff}` };
      }
    }
  } finally {
    await sess.release();
  }
  return { status: 'pass' };
}

// misfit returns a data-does-not-fit failure when a tensor input's test
// data contradicts a fixed dimension the model declares (ORT rejects such
// inputs before running), for cases the JS binding cannot run.
function misfit(dir, sets, ins, why) {
  for (const s of sets) {
    for (const [k, v] of ins.entries()) {
      const f = path.join(dir, s, `input_${k}.pb`);
      const shape = v.type?.tensor_type?.shape;
      if (!shape || !fs.existsSync(f)) continue;
      const decl = shape.dim.map((d) => (d.value === 'dim_value' ? Number(toBig(d.dim_value)) : null));
      const got = readPB(TensorProto, f).dims.map((d) => Number(toBig(d)));
      if (got.length !== decl.length || decl.some((d, i) => d !== null && d !== got[i])) {
        const fmt = (ds) => `[${ds.map((d) => d ?? '?').join(',')}]`;
        return { status: 'static', stage: 'run', category: 'data-does-not-fit',
          reason: `${s}: input ${JSON.stringify(v.name)} has shape ${fmt(got)}, the model declares ${fmt(decl)} (static check: ORT's JS binding cannot run a case with ${why})` };
      }
    }
  }
  return null;
}

function discover() {
  const cases = [];
  for (const folder of args.folders.split(',')) {
    const fdir = path.join(args.data, folder);
    for (const name of fs.readdirSync(fdir).sort()) {
      if (fs.existsSync(path.join(fdir, name, 'model.onnx'))) cases.push({ name: `${folder}/${name}`, dir: path.join(fdir, name) });
    }
  }
  return cases.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// readManual parses manual.tsv: case, stage, category, condition, reason, evidence.
function readManual(file) {
  const m = new Map();
  fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (line.trim() === '' || line.startsWith('#')) return;
    const f = line.split('\t');
    if (f.length !== 6) throw new Error(`${file}:${i + 1}: want 6 tab-separated fields (case, stage, category, condition, reason, evidence), got ${f.length}`);
    m.set(f[0], { stage: f[1], category: f[2], when: f[3], reason: f[4], evidence: f[5] });
  });
  return m;
}

const manual = readManual(args.manual);
const match = args.match ? new RegExp(args.match) : null;
const cases = discover().filter((c) => !match || match.test(c.name));
const entries = [];
const counts = { pass: 0, fail: 0, static: 0, unrunnable: 0, manual: 0 };
const unrunnable = [];
const errors = [];
for (const c of cases) {
  let r;
  try {
    r = await classify(c.dir);
  } catch (e) {
    r = e instanceof NotRunnable ? { status: 'unrunnable', reason: e.message } : null;
    if (!r) { errors.push(`${c.name}: ${e.stack}`); continue; }
  }
  const m = manual.get(c.name);
  manual.delete(c.name);
  if (r.status !== 'unrunnable' && m) {
    errors.push(`${c.name}: manual.tsv classifies it, but it runs in ORT's JS binding (${r.status}); remove it from manual.tsv`);
    continue;
  }
  counts[r.status]++;
  if (r.status === 'unrunnable') {
    if (m) {
      counts.manual++;
      entries.push({ name: c.name, stage: m.stage, category: m.category, when: m.when, reason: `${m.reason} [manual: ${m.evidence}]` });
    } else {
      unrunnable.push(`${c.name} (${r.reason})`);
    }
    continue;
  }
  if (r.status === 'fail' || r.status === 'static') {
    const msg = r.msg ?? r.reason;
    const cat = r.category ?? category(r.stage, msg, readPB(ModelProto, path.join(c.dir, 'model.onnx')));
    entries.push({ name: c.name, stage: r.stage, category: cat, when: condition(msg, cat), reason: r.reason ?? shortReason(msg) });
  }
  if (process.stderr.isTTY) process.stderr.write(`\r${counts.pass + counts.fail + counts.static + counts.unrunnable}/${cases.length}`);
}
for (const name of manual.keys()) errors.push(`${name}: in manual.tsv but not a case under ${args.data}`);
if (errors.length) {
  console.error(`gen.mjs: ${errors.length} errors:\n${errors.join('\n')}`);
  process.exit(1);
}

const byCategory = {};
for (const e of entries) byCategory[e.category] = (byCategory[e.category] ?? 0) + 1;
const header = [
  '# Expected failures of `attnx conformance` on the ONNX backend test data',
  `# (${args.data}: ${args.folders}).`,
  '# Generated by internal/conformance/expected/gen.mjs (make conformance-expected), which runs',
  `# every case through ONNX Runtime ${ort.env.versions.common} (onnxruntime-node, Node ${process.version})`,
  '# from the original model.onnx, independently of attnx\'s Go code,',
  `# on ${new Date().toISOString().slice(0, 10)}, rtol ${rtol} atol ${atol}.`,
  `# Cases: ${cases.length}. Run through ORT's JS binding: ${counts.pass + counts.fail} (${counts.pass} pass, ${counts.fail} fail).`,
  `# Failing by static rules, without ORT (values the Go binding cannot feed, inputs that`,
  `# contradict the model's declared shapes): ${counts.static}. Not runnable in the JS binding (sequences,`,
  `# bfloat16): ${counts.unrunnable}, of which ${counts.manual} classified by hand in manual.tsv, the others expected to pass.`,
  `# Entries by category: ${Object.entries(byCategory).sort().map(([k, v]) => `${k} ${v}`).join(', ')}.`,
  '# Do not edit: change manual.tsv or gen.mjs and regenerate.',
  '#',
  '# case\tstage\tcategory\tcondition\treason',
];
const lines = entries.map((e) => [e.name, e.stage, e.category, e.when, oneLine(e.reason)].join('\t'));
const text = header.join('\n') + '\n' + lines.join('\n') + '\n';
if (args.out) fs.writeFileSync(args.out, text); else process.stdout.write(text);
console.error(`${process.stderr.isTTY ? '\n' : ''}gen.mjs: ${cases.length} cases, ${entries.length} expected failures; not runnable in the JS binding and expected to pass: ${unrunnable.length}`);
for (const u of unrunnable) console.error(`  unchecked: ${u}`);
