/**
 * The summary request of each compaction strategy (spec "Compaction metadata (harness `pi`)",
 * strategy rules 1–4), built from the main request the turn was about to send. Guarantees:
 * - `cc-style` and `opencode-style` are isolated: a short summary-only system prompt, no tools,
 *   the conversation as one transcript with image (and document) bytes replaced by placeholders,
 *   and a compaction session id of its own, so nothing shares the main request's cache prefix;
 *   `opencode-style` asks for the template with sections Goal, Instructions, Discoveries,
 *   Accomplished, Files. The transcript keeps its newest part when it exceeds what the window
 *   leaves (an omission note says so);
 * - `summarize` replays the main request as is (system prompt, tool declarations, messages and
 *   session id) and appends one private user instruction; tool choice is never set;
 * - every strategy: no reasoning requested (no effort), output capped by
 *   `compaction_max_summary_tokens`; `compaction_summary_prompt` replaces the built-in prompt.
 * Proved by test/e2e/turns/compaction.test.ts (the scripted model captures each payload).
 */
import type { ChatMessage, CompactionSettings, ContentBlock, ModelRequest } from '@agentfleet/core';

export const ISOLATED_SYSTEM_PROMPT =
  'You summarise conversations between a user and an AI agent so the agent can continue the work from the summary alone. Reply with the summary only. Do not call tools.';

export const CC_STYLE_PROMPT =
  'Write a concise but complete summary of the conversation above so the work can continue without it. Include: the user requests and intent (the latest request verbatim), key technical details and decisions, files and commands involved, errors met and how they were fixed, what is done, and what remains to be done next. Reply with the summary only.';

export const OPENCODE_STYLE_PROMPT = [
  'Summarise the conversation above so the work can continue from the summary alone. Use exactly this template and fill every section:',
  '',
  '## Goal',
  'What the user wants to achieve.',
  '',
  '## Instructions',
  'Instructions and constraints the user gave that still apply.',
  '',
  '## Discoveries',
  'What was learnt about the code, the environment and the problem.',
  '',
  '## Accomplished',
  'What is done, and what is in progress or remains to be done.',
  '',
  '## Files',
  'Files read, created or changed, with a note on each.',
].join('\n');

export const SUMMARIZE_INSTRUCTION =
  'Private compaction instruction (from the platform, not the user): do not call any tool. Write a summary of this conversation so far that lets you continue the work without it: the user requests (the latest verbatim), decisions, findings, files involved, what is done and what remains. Reply with the summary only.';

const CHARS_PER_TOKEN = 3;

function blockText(b: ContentBlock | Record<string, unknown>): string {
  const block = b as ContentBlock;
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
      return '[image]';
    case 'document':
      return `[document${block.title ? `: ${block.title}` : ''}]`;
    case 'thinking':
      return '';
    case 'tool_use':
      return `[tool call ${block.name}] ${JSON.stringify(block.input)}`;
    case 'tool_result':
      return `[tool result${block.is_error ? ', error' : ''}] ${block.content.map(blockText).join('\n')}`;
    default:
      return `[${String((b as { type?: unknown }).type)}]`;
  }
}

/** The conversation as labelled lines, images and documents as placeholders. */
export function transcriptLines(messages: ChatMessage[]): string[] {
  const out: string[] = [];
  for (const m of messages) {
    const text = m.content
      .map(blockText)
      .filter((t) => t)
      .join('\n');
    if (text) out.push(`[${m.role}]\n${text}`);
  }
  return out;
}

/**
 * The newest lines that fit `maxChars` (deterministic: whole lines from the end; a single line
 * longer than the budget keeps its tail), with a note when older lines were left out.
 */
export function tailWithin(lines: string[], maxChars: number): string {
  const kept: string[] = [];
  let used = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (used + line.length + 2 > maxChars) {
      let omitted = i + 1;
      if (!kept.length) {
        kept.unshift(`…${line.slice(line.length - Math.max(0, maxChars - 64))}`);
        omitted = i;
      }
      if (omitted) kept.unshift(`[${omitted} earlier messages omitted]`);
      break;
    }
    kept.unshift(line);
    used += line.length + 2;
  }
  return kept.join('\n\n');
}

/** The summary request for `settings.strategy`; `main` is the request the turn would send. */
export function summaryRequest(
  settings: CompactionSettings,
  main: ModelRequest,
  contextWindow: number | undefined,
  compactionSessionId: string,
  /** The card's own output ceiling (`pi_config.maxTokens`), if any. */
  cardMaxTokens?: number,
): ModelRequest {
  const cap = Math.min(settings.maxSummaryTokens, cardMaxTokens ?? Infinity);
  const common = {
    model: main.model,
    maxTokens: cap,
    maxTokensLimit: cap,
    ...(main.headers ? { headers: main.headers } : {}),
    ...(main.signal ? { signal: main.signal } : {}),
  };
  if (settings.strategy === 'summarize') {
    const instruction = settings.summaryPrompt ?? SUMMARIZE_INSTRUCTION;
    return {
      ...common,
      system: main.system,
      tools: main.tools,
      messages: [
        ...main.messages,
        { role: 'user', content: [{ type: 'text', text: instruction }] },
      ],
      ...(main.sessionId ? { sessionId: main.sessionId } : {}),
    };
  }
  const prompt =
    settings.summaryPrompt ??
    (settings.strategy === 'opencode-style' ? OPENCODE_STYLE_PROMPT : CC_STYLE_PROMPT);
  // Room for the transcript: the window less the answer, the prompts and a margin.
  const room = contextWindow
    ? (contextWindow - cap - 64) * CHARS_PER_TOKEN -
      ISOLATED_SYSTEM_PROMPT.length -
      prompt.length -
      200
    : Infinity;
  const lines = [
    ...(main.system ? [`[agent system prompt]\n${main.system}`] : []),
    ...transcriptLines(main.messages),
  ];
  const transcript = tailWithin(lines, Math.max(1_000, room));
  return {
    ...common,
    system: ISOLATED_SYSTEM_PROMPT,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: `<conversation>\n${transcript}\n</conversation>\n\n${prompt}` },
        ],
      },
    ],
    sessionId: compactionSessionId,
  };
}

/**
 * The platform's fallback summary when summarising failed: the newest messages that fit the
 * summary cap, verbatim (images as placeholders), oldest dropped first. Deterministic.
 */
export function fallbackSummary(messages: ChatMessage[], maxSummaryTokens: number): string {
  const note =
    'Summarising the earlier conversation failed, so it was truncated: its oldest messages were dropped and the newest are kept verbatim below.';
  const budget = Math.max(64, maxSummaryTokens * CHARS_PER_TOKEN);
  return `${note}\n\n${tailWithin(transcriptLines(messages), budget)}`;
}
