import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

/** Run an entry file, write `lines` in one write, and collect what it prints until it exits. */
async function converse(entry, lines) {
  const child = spawn(process.execPath, [here(entry)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.split('\n').length > lines.length) child.stdin.end();
  });
  child.stdin.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  const [code] = await once(child, 'exit');
  return { code, messages: out.split('\n').filter(Boolean).map((line) => JSON.parse(line)) };
}

describe('entry points on real standard input and output', () => {
  for (const [entry, role] of [['../provider.mjs', 'provider'], ['../service.mjs', 'service']]) {
    it(`${entry} says hello as a ${role}, builds a subject, answers ping, and exits when its input closes`, async () => {
      const { code, messages } = await converse(entry, [
        { type: 'call', id: 's1', method: 'hello', params: { protocol: '1.0', suite: 'test', spec: '1.2.0' } },
        { type: 'call', id: 's2', method: 'new', params: {} },
        { type: 'call', id: 's3', method: 'ping', params: {} },
      ]);
      assert.equal(code, 0);
      assert.deepEqual(messages.map((m) => [m.type, m.id]), [['return', 's1'], ['return', 's2'], ['return', 's3']]);
      assert.equal(messages[0].value.role, role);
      assert.equal(messages[0].value.protocol, '1.2');
    });
  }
});
