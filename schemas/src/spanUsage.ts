import { Type } from '@sinclair/typebox';
import { Obj } from './common.js';

const TokenCount = Type.Integer({ minimum: 0 });

/** SDK BetaManagedAgentsSpanModelUsage: the token usage a span reports. */
export const SpanModelUsage = Obj({
  input_tokens: TokenCount,
  output_tokens: TokenCount,
  cache_creation_input_tokens: TokenCount,
  cache_read_input_tokens: TokenCount,
  speed: Type.Optional(Type.Union([Type.Literal('standard'), Type.Literal('fast')])),
});
