/**
 * The built-in skills (core/skills/{pdf,xlsx,docx,pptx}) work for real: through the official
 * TypeScript SDK against an in-process platform with the local (bubblewrap) driver, an
 * environment whose `packages.pip` declares the libraries the skills name (installed from PyPI
 * into the environment's package layer), an agent that binds the built-ins by id
 * (`{type: 'anthropic', skill_id}`), and the scripted model running each skill's helper script
 * with bash, exactly as its SKILL.md tells the model to.
 *
 * - the skills are mounted at /home/user/.skills/{name}/ and their SKILL.md bodies are in the
 *   model request's system prompt;
 * - make_pdf.py, make_xlsx.py, make_docx.py and make_pptx.py write real documents into
 *   /mnt/session/outputs, and their readers (pdf_text.py, read_xlsx.py, docx_text.py,
 *   pptx_text.py) read them back in the sandbox;
 * - the documents appear in the session outputs and download through the public API: the PDF is
 *   the very file pypdf read (same sha256), starts with %PDF-, ends with %%EOF, its startxref
 *   points at its xref table and it has the pages asked for; the XLSX, DOCX and PPTX are zips
 *   with their workbook / document / slide parts holding the values written;
 * - pdf_merge.py picks a page that pdf_text.py then reads alone; a bad spec exits 2 naming the key;
 * - without the packages, a script exits 3 naming the pip package to declare.
 *
 * This machine's network resolves PyPI to a TEST-NET address the egress policy refuses: the
 * test opens exactly those names (EGRESS_ALLOW_PRIVATE_HOSTS), as test/e2e/environments/env-packages.test.ts does.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { strFromU8, unzipSync } from 'fflate';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const PIP = ['reportlab', 'pypdf', 'openpyxl', 'python-docx', 'python-pptx'];
const SKILLS = '/home/user/.skills';
const OUT = '/mnt/session/outputs';

let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      SANDBOX_SLEEP_AFTER_MS: '60000',
      EGRESS_ALLOW_PRIVATE_HOSTS: 'pypi.org,files.pythonhosted.org',
    },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** A bash script that writes `spec` to a file and runs the skill's maker, then its reader. */
const skillRun = (skill: string, spec: unknown, make: string, read: string, out: string) =>
  [
    'set -e',
    `head -3 ${SKILLS}/${skill}/SKILL.md`,
    `cat > /tmp/${skill}-spec.json <<'JSON'`,
    JSON.stringify(spec),
    'JSON',
    `python3 ${SKILLS}/${skill}/scripts/${make} /tmp/${skill}-spec.json ${OUT}/${out}`,
    `python3 ${SKILLS}/${skill}/scripts/${read} ${OUT}/${out}`,
    `sha256sum ${OUT}/${out}`,
    `echo ${skill.toUpperCase()}-DONE`,
  ].join('\n');

const PDF_SPEC = {
  title: 'Skill report 4711',
  blocks: [
    { type: 'heading', text: 'Summary' },
    { type: 'paragraph', text: 'Built by the pdf skill in the sandbox.' },
    {
      type: 'table',
      rows: [
        ['Region', 'Total'],
        ['North', 255],
      ],
    },
    { type: 'page_break' },
    { type: 'paragraph', text: 'Second page marker' },
  ],
};
const XLSX_SPEC = {
  sheets: [
    {
      name: 'Sales',
      rows: [
        ['Region', 'Q1', 'Q2', 'Total'],
        ['North', 120, 135, '=SUM(B2:C2)'],
      ],
    },
  ],
};
const DOCX_SPEC = {
  title: 'Plan 4711',
  blocks: [
    { type: 'heading', text: 'Goals', level: 1 },
    {
      type: 'table',
      rows: [
        ['Task', 'Owner'],
        ['Design', 'Ana'],
      ],
    },
  ],
};
const PPTX_SPEC = {
  slides: [
    { layout: 'title', title: 'Deck 4711', subtitle: 'built in the sandbox' },
    { layout: 'bullets', title: 'Highlights', bullets: ['Revenue +12%'] },
  ],
};

/** pdf_merge.py and pdf_text.py on a picked page; make_xlsx.py with a bad cell (exit status). */
const EXTRAS = [
  `python3 ${SKILLS}/pdf/scripts/pdf_merge.py /tmp/page2.pdf ${OUT}/report.pdf:2`,
  `python3 ${SKILLS}/pdf/scripts/pdf_text.py /tmp/page2.pdf`,
  `echo '{"sheets": [{"rows": [["ok"], [{"x": 1}]]}]}' | python3 ${SKILLS}/xlsx/scripts/make_xlsx.py - /tmp/bad.xlsx 2>&1; echo "exit=$?"`,
].join('\n');

/** The top-level system prompt of a captured Anthropic-protocol model request. */
function systemText(body: any): string {
  const s = body?.system;
  if (typeof s === 'string') return s;
  return Array.isArray(s) ? s.map((b: any) => b.text ?? '').join('\n') : '';
}

async function download(sid: string, name: string): Promise<Uint8Array> {
  const res = await t.http(`/v1/sessions/${sid}/outputs/${name}`, { headers: BETA });
  expect(res.status, name).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const latin1 = (b: Uint8Array) => Buffer.from(b).toString('latin1');

describe('built-in skills in a real sandbox', () => {
  it('the pdf, xlsx, docx and pptx skills’ scripts produce real documents in the session outputs', async () => {
    const model = 'skills-builtin-model';
    await addModelCard(t, model);
    const env = await t.client.beta.environments.create({
      name: 'office-packages',
      config: { type: 'cloud', packages: { type: 'packages', pip: PIP } },
    } as any);
    const agent = await t.client.beta.agents.create({
      name: 'office',
      model,
      tools: [{ type: 'agent_toolset_20260401' }],
      skills: ['pdf', 'xlsx', 'docx', 'pptx'].map((id) => ({ type: 'anthropic', skill_id: id })),
    } as any);
    const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id }))
      .id;
    t.model.script(
      model,
      call('bash', {
        command: skillRun('pdf', PDF_SPEC, 'make_pdf.py', 'pdf_text.py --info', 'report.pdf'),
      }),
      call('bash', {
        command: skillRun('xlsx', XLSX_SPEC, 'make_xlsx.py', 'read_xlsx.py', 'sales.xlsx'),
      }),
      call('bash', {
        command: skillRun('docx', DOCX_SPEC, 'make_docx.py', 'docx_text.py', 'plan.docx'),
      }),
      call('bash', {
        command: skillRun('pptx', PPTX_SPEC, 'make_pptx.py', 'pptx_text.py', 'deck.pptx'),
      }),
      call('bash', { command: EXTRAS }),
      say('done'),
    );
    const turn = await runTurn(t.client, sid, 'make the documents');
    const texts = turn.toolResults.map((r) => (r.content?.[0]?.text ?? '') as string);
    expect(texts).toHaveLength(5);
    turn.toolResults.forEach((r, i) => expect(r.is_error, texts[i]).toBe(false));
    expect(turn.events.some((e) => e.type === 'session.error')).toBe(false);
    const [pdfOut = '', xlsxOut = '', docxOut = '', pptxOut = '', extrasOut = ''] = texts;

    // the skills are mounted by name and their bodies were in the model's system prompt
    expect(pdfOut).toContain('name: pdf');
    expect(xlsxOut).toContain('name: xlsx');
    const system = systemText(t.model.requests.find((r) => r.model === model)?.body);
    for (const id of ['pdf', 'xlsx', 'docx', 'pptx'])
      expect(system).toContain(`<source name="skill:${id}"><skill name="${id}">`);
    expect(system).toContain('make_pdf.py');

    // each maker wrote its file and each reader read it back in the sandbox
    expect(pdfOut).toContain(`wrote ${OUT}/report.pdf`);
    expect(pdfOut).toContain('pages: 2');
    expect(pdfOut).toContain('title: Skill report 4711');
    expect(pdfOut).toContain('Built by the pdf skill in the sandbox.');
    expect(pdfOut).toContain('Second page marker');
    expect(xlsxOut).toContain(`wrote ${OUT}/sales.xlsx`);
    expect(xlsxOut).toContain('North\t120\t135\t=SUM(B2:C2)');
    expect(docxOut).toContain('Design | Ana');
    expect(pptxOut).toContain('Deck 4711');
    expect(pptxOut).toContain('Revenue +12%');

    // pdf_merge.py picks a page (written outside the outputs); a bad spec exits 2 naming the key
    expect(extrasOut).toContain('wrote /tmp/page2.pdf');
    expect(extrasOut).toContain('--- page 1 ---\nSecond page marker');
    expect(extrasOut).not.toContain('Built by the pdf skill');
    expect(extrasOut).toContain('make_xlsx.py: error: spec.sheets[0].rows[1][0]: a cell object');
    expect(extrasOut).toContain('exit=2');

    // the outputs are listed and download through the public API
    const list = (await (
      await t.http(`/v1/sessions/${sid}/outputs`, { headers: BETA })
    ).json()) as any;
    expect(list.data.map((o: any) => o.filename).sort()).toEqual([
      'deck.pptx',
      'plan.docx',
      'report.pdf',
      'sales.xlsx',
    ]);

    // PDF: the file pypdf read in the sandbox (same digest), a well-formed PDF of two pages
    const pdf = await download(sid, 'report.pdf');
    expect(pdfOut).toContain(`${sha256(pdf)}  ${OUT}/report.pdf`);
    const raw = latin1(pdf);
    expect(raw.startsWith('%PDF-')).toBe(true);
    expect(raw.trimEnd().endsWith('%%EOF')).toBe(true);
    const startxref = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(raw)?.[1]);
    expect(raw.slice(startxref, startxref + 4)).toBe('xref');
    expect(raw).toMatch(/\/Count 2\b/);
    expect(raw).toContain('/Title (Skill report 4711)');

    // XLSX: a zip with the workbook, the sheet and the values and formula written
    const xlsxBytes = await download(sid, 'sales.xlsx');
    expect(xlsxOut).toContain(`${sha256(xlsxBytes)}  ${OUT}/sales.xlsx`);
    const xlsx = unzipSync(xlsxBytes);
    expect(strFromU8(xlsx['xl/workbook.xml']!)).toMatch(/<sheet [^>]*name="Sales"/);
    const sheet = strFromU8(xlsx['xl/worksheets/sheet1.xml']!);
    expect(sheet).toContain('<t>North</t>');
    expect(sheet).toContain('<v>120</v>');
    expect(sheet).toContain('<f>SUM(B2:C2)</f>');

    // DOCX and PPTX: zips whose document and slide parts hold the text written
    const docx = unzipSync(await download(sid, 'plan.docx'));
    const document = strFromU8(docx['word/document.xml']!);
    for (const s of ['Plan 4711', 'Goals', 'Design', 'Ana']) expect(document).toContain(s);
    const pptx = unzipSync(await download(sid, 'deck.pptx'));
    expect(strFromU8(pptx['ppt/slides/slide1.xml']!)).toContain('Deck 4711');
    expect(strFromU8(pptx['ppt/slides/slide2.xml']!)).toContain('Revenue +12%');
  }, 600_000);

  it('without the packages declared, a skill script exits 3 naming the pip package to declare', async () => {
    const model = 'skills-builtin-nopkg';
    await addModelCard(t, model);
    const env = await t.client.beta.environments.create({ name: 'no-packages' });
    const agent = await t.client.beta.agents.create({
      name: 'office-nopkg',
      model,
      tools: [{ type: 'agent_toolset_20260401' }],
      skills: [{ type: 'anthropic', skill_id: 'xlsx' }],
    } as any);
    const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id }))
      .id;
    const spec = JSON.stringify(XLSX_SPEC).replace(/'/g, '');
    t.model.script(
      model,
      call('bash', {
        command: `echo '${spec}' | python3 ${SKILLS}/xlsx/scripts/make_xlsx.py - ${OUT}/x.xlsx; echo "exit=$?"; ls ${OUT}`,
      }),
      say('done'),
    );
    const turn = await runTurn(t.client, sid, 'make a spreadsheet');
    const text = (turn.toolResults[0]?.content?.[0]?.text ?? '') as string;
    expect(text).toContain("the Python package 'openpyxl' is not installed");
    expect(text).toContain('config.packages.pip: ["openpyxl"]');
    expect(text).toContain('exit=3');
    expect(text).not.toContain('x.xlsx');
    const list = (await (
      await t.http(`/v1/sessions/${sid}/outputs`, { headers: BETA })
    ).json()) as any;
    expect(list.data).toEqual([]);
  }, 180_000);
});
