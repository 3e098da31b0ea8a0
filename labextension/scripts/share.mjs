// The browser code the sidebar and the notebook widgets share (src/shared/*.js) is written
// once, here. The build copies each file, as it is, to where each surface loads it from:
// lib/shared/ (tsc emits no .js inputs; the labextension bundler reads lib/) and the Python
// package's jupyter_dw/notebook/static/shared/ (git-ignored, shipped in the wheel: the
// widgets' ESM joins these files). tests/unit/test_shared_static.py fails on a stale copy.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { URL } from 'node:url';

const SOURCE = new URL('../src/shared/', import.meta.url);
const TARGETS = ['../lib/shared/', '../../jupyter_dw/notebook/static/shared/'].map(
  target => new URL(target, import.meta.url)
);

for (const target of TARGETS) {
  mkdirSync(target, { recursive: true });
  for (const name of readdirSync(SOURCE).filter(n => n.endsWith('.js'))) {
    copyFileSync(new URL(name, SOURCE), new URL(name, target));
  }
}
