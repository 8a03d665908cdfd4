/**
 * `npm run config:docs`: writes the configuration table of docs/configuration.md (between its
 * config-table markers) from the schema in core/src/config. core/test/config.docs.test.ts fails
 * while the file differs from what this writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withConfigTable } from '../src/config/docs.js';

const file = join(import.meta.dirname, '..', '..', 'docs', 'configuration.md');
const before = readFileSync(file, 'utf8');
const after = withConfigTable(before);
if (after !== before) writeFileSync(file, after);
process.stdout.write(`${after === before ? 'unchanged' : 'written'}: ${file}\n`);
