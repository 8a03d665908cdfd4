/**
 * The configuration table of docs/configuration.md, generated from the schema (`npm run
 * config:docs` writes it between the config-table markers; core/test/config.docs.test.ts fails
 * when the file differs). It lists every variable the platform reads: the schema's, the ones
 * it refuses, and the few read outside core/src/config (READ_ELSEWHERE).
 */
import { CONFIG_SECTIONS } from './config.js';
import { docRows, type DocRow } from './schema.js';

export const TABLE_BEGIN = '<!-- config-table:begin -->';
export const TABLE_END = '<!-- config-table:end -->';

/** Variables read outside core/src/config: not operator settings of the platform's own config. */
export const READ_ELSEWHERE: { env: string; readBy: string; description: string }[] = [
  {
    env: 'PATH',
    readBy:
      'core/src/sandbox/drivers/bubblewrap/layout.ts; in a sandbox, sandbox-agent/src/agent/tarCli.ts and sandbox-agent/src/launcher/launcher.ts',
    description:
      'where the worker looks for `bwrap` and the host tools local sandboxes use; inside a sandbox, where the sandbox agent finds `tar`',
  },
  {
    env: 'AGENTFLEET_AGENT_LISTEN',
    readBy: 'sandbox-agent/src/launcher/launcher.ts (set by nomad/src/jobTemplate.ts)',
    description:
      'set by the platform in each Nomad task, never by an operator: the `host:port` the sandbox agent listens on',
  },
  {
    env: 'AGENTFLEET_AGENT_TOKEN',
    readBy: 'sandbox-agent/src/launcher/launcher.ts (set by nomad/src/jobTemplate.ts)',
    description:
      "set by the platform in each Nomad task, never by an operator: the token the sandbox agent requires of the worker's calls",
  },
];

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const variable = (r: DocRow) =>
  [
    `\`${r.env}\``,
    ...r.aliases.map((a) => `(alias \`${a}\`)`),
    ...(r.secret ? ['(secret: never logged)'] : []),
  ].join(' ');

/** The generated text between the markers (without them). */
export function configTable(): string {
  const out = [
    '<!-- generated from core/src/config by `npm run config:docs`: edit the schema there, not this table -->',
    '',
  ];
  for (const { title, schema } of CONFIG_SECTIONS) {
    out.push(`### ${title}`, '', '| variable | default | meaning |', '|---|---|---|');
    for (const r of docRows(schema))
      out.push(`| ${variable(r)} | ${cell(r.default)} | ${cell(r.description)} |`);
    out.push('');
  }
  out.push(
    '### Read outside the configuration',
    '',
    '| variable | read by | meaning |',
    '|---|---|---|',
    ...READ_ELSEWHERE.map((e) => `| \`${e.env}\` | ${cell(e.readBy)} | ${cell(e.description)} |`),
  );
  return out.join('\n');
}

/** The markdown with the text between its markers replaced by the generated table. */
export function withConfigTable(markdown: string): string {
  const begin = markdown.indexOf(TABLE_BEGIN);
  const end = markdown.indexOf(TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`no ${TABLE_BEGIN} … ${TABLE_END} markers`);
  return `${markdown.slice(0, begin + TABLE_BEGIN.length)}\n${configTable()}\n${markdown.slice(end)}`;
}
