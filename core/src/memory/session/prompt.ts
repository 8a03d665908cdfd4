/**
 * The memory section of a session's system prompt (SDK: the store's description and the
 * attachment's instructions are "rendered into the agent's system prompt"): after the agent's
 * prompt, one `<memory_stores>` block naming each mounted store's name, mount path and access,
 * with its description and instructions, and how the mount behaves (files under a read_write
 * mount are saved when the turn ends; read_only changes are not). Sessions without memory
 * stores get their prompt unchanged. Proved by test/e2e/memory/memory-session.test.ts (captured request).
 */
import type { SessionMemoryResource } from './resources.js';

const attr = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function memoryPromptSection(stores: readonly SessionMemoryResource[]): string | null {
  if (!stores.length) return null;
  const lines = [
    '<memory_stores>',
    'Memory stores are mounted in your sandbox as directories of text files (one file per memory; the path below the mount is the memory path). Files you create, edit or delete under a read_write mount are saved to the store when your turn ends; if a memory changed meanwhile, your version is kept beside it as <path>.conflict-<time>. Changes under a read_only mount are not saved.',
  ];
  for (const s of stores) {
    lines.push(
      `<memory_store name="${attr(s.name)}" mount_path="${attr(s.mount_path)}" access="${s.access}">`,
    );
    if (s.description) lines.push(`<description>${s.description}</description>`);
    if (s.instructions) lines.push(`<instructions>${s.instructions}</instructions>`);
    lines.push('</memory_store>');
  }
  lines.push('</memory_stores>');
  return lines.join('\n');
}

/** The agent's system prompt followed by the memory section (blank-line separated). */
export function systemWithMemory(
  system: string | null | undefined,
  stores: readonly SessionMemoryResource[],
): string | null {
  const section = memoryPromptSection(stores);
  if (!section) return system ?? null;
  return system ? `${system}\n\n${section}` : section;
}
