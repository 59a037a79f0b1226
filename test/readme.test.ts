/**
 * Every code block of README.md and of the pages in guides/, checked as the examples are: each `ts` block runs (tsx, as an
 * ES module in this checkout, where `mqlite` is the source) and must exit 0 by itself; each
 * `json` block parses. A block that is a fragment names what it needs in HTML comments just
 * before it (`<!-- snippet-before: code -->`, `<!-- snippet-after: code -->`), and a block that
 * cannot run alone says why (`<!-- snippet-skip: reason -->`). `AMQP_URL` names a server of an
 * in-process broker, for the snippets that connect a client.
 */
import { type SpawnOptions, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../src/broker/broker.js';
import { type AmqpServer, listen } from '../src/server/server.js';

const root = fileURLToPath(new URL('..', import.meta.url));
// README and every guide page, by path from the root.
const pages = [
  'README.md',
  ...readdirSync(path.join(root, 'guides'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `guides/${f}`),
];
const texts = new Map(pages.map((p) => [p, readFileSync(path.join(root, p), 'utf8')]));

interface Block {
  readonly page: string;
  readonly line: number;
  readonly lang: string;
  readonly code: string;
  readonly marks: Readonly<Record<string, string>>;
}

/** The fenced blocks of `text`, each with the snippet marks on the lines just before it. */
function blocks(page: string, text: string): Block[] {
  const lines = text.split('\n');
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    while (++i < lines.length && lines[i] !== '```');
    const marks: Record<string, string> = {};
    for (let j = start - 1; j >= 0; j--) {
      const mark = /^<!-- snippet-(\w+): (.*) -->$/.exec(lines[j]!);
      if (!mark) break;
      marks[mark[1]!] = mark[2]!;
    }
    found.push({
      page,
      line: start + 1,
      lang: open[1]!,
      code: lines.slice(start + 1, i).join('\n'),
      marks,
    });
  }
  return found;
}

/** Runs the snippet `file` to its end (killed after a minute) with its stderr and exit code. */
function runTo(
  file: string,
  options: SpawnOptions,
): Promise<{ stderr: string; status: number | null }> {
  const child = spawn(process.execPath, ['--import', tsx, file], { ...options, stdio: 'pipe' });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill(), 60_000);
  return new Promise((resolve) => {
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ stderr, status });
    });
  });
}

const all = pages.flatMap((p) => blocks(p, texts.get(p)!));
const scratch = path.join(root, '.mqlite-tmp', 'readme');
// By URL: the snippets run in a directory of their own (they may create ./data), without tsx.
const tsx = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

describe('README and guides code blocks', () => {
  let broker: Broker;
  let server: AmqpServer;
  let cwd: string;
  beforeAll(async () => {
    broker = await Broker.open();
    server = await listen(broker, { port: 0 });
    mkdirSync(scratch, { recursive: true });
    cwd = mkdtempSync(path.join(tmpdir(), 'mqlite-readme-'));
  });
  afterAll(async () => {
    await server.close();
    await broker.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('has runnable blocks, each fragment marked', () => {
    expect(all.filter((b) => b.lang === 'ts').length).toBeGreaterThanOrEqual(10);
    const unknown = all.flatMap((b) =>
      Object.keys(b.marks).filter((m) => !['before', 'after', 'skip'].includes(m)),
    );
    expect(unknown).toEqual([]);
  });

  for (const block of all.filter((b) => b.lang === 'json')) {
    it(`${block.page} line ${block.line}: the JSON parses`, () => {
      expect(() => JSON.parse(block.code)).not.toThrow();
    });
  }

  for (const block of all.filter((b) => b.lang === 'ts')) {
    it.skipIf(block.marks.skip !== undefined)(
      `${block.page} line ${block.line}: the TypeScript runs and exits 0${block.marks.skip ? ` (skipped: ${block.marks.skip})` : ''}`,
      async () => {
        const name = block.page.replace(/\W+/g, '-');
        const file = path.join(scratch, `${name}-line-${block.line}.mts`);
        const { before = '', after = '' } = block.marks;
        // Imports first wherever the snippet has them, so its imports may follow the setup's.
        writeFileSync(file, `${before}\n${block.code}\n${after}\n`);
        // Not spawnSync: the server the snippets connect to runs in this process.
        const run = await runTo(file, {
          cwd,
          env: {
            ...process.env,
            AMQP_URL: server.url,
            TSX_TSCONFIG_PATH: path.join(root, 'tsconfig.json'),
          },
        });
        expect(run.stderr, `${block.page} line ${block.line}`).toBe('');
        expect(run.status, `${block.page} line ${block.line} exits by itself`).toBe(0);
      },
    );
  }
});

/** GitHub's anchor of each heading of `text` (outside code blocks), a repeated one numbered. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  let code = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) code = !code;
    const heading = code ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replaceAll(' ', '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    found.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return found;
}

describe('README and guides links', () => {
  it('every anchor into README or a guide (the contents included) names a heading', () => {
    const headings = new Map(pages.map((p) => [p, anchors(texts.get(p)!)]));
    const broken = pages.flatMap((p) =>
      [...texts.get(p)!.matchAll(/\]\(((?:\.\.\/)?(?:guides\/)?[\w.-]+\.md)?#([\w-]+)\)/g)]
        .map((m) => ({
          target: path.normalize(path.join(path.dirname(p), m[1] ?? path.basename(p))),
          anchor: m[2]!,
        }))
        .filter(({ target, anchor }) => headings.has(target) && !headings.get(target)!.has(anchor))
        .map(({ target, anchor }) => `${p} -> ${target}#${anchor}`),
    );
    expect(broken).toEqual([]);
  });

  it("README's contents list every section of README", () => {
    const readme = texts.get('README.md')!;
    const contents = readme.split('\n## Contents\n')[1]!.split('\n## ')[0]!;
    const listed = [...contents.matchAll(/^- \[.*\]\(#([\w-]+)\)$/gm)].map((m) => m[1]);
    const sections = [...readme.matchAll(/^## (.*)$/gm)]
      .map((m) => m[1]!)
      .filter((h) => h !== 'Contents')
      .map((h) => [...anchors(`## ${h}`)][0]);
    expect(listed).toEqual(sections);
  });

  it('every relative link to a Markdown file names a file that exists', () => {
    const broken = pages.flatMap((p) =>
      [...texts.get(p)!.matchAll(/\]\(((?:\.\.?\/)*(?:guides\/)?[\w.-]+\.md)(?:#[\w-]*)?\)/g)]
        .map((m) => m[1]!)
        .filter((target) => !existsSync(path.join(root, path.dirname(p), target)))
        .map((target) => `${p} -> ${target}`),
    );
    expect(broken).toEqual([]);
  });
});
