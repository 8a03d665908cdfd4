/**
 * The catalog entries of the extension events that live in their own modules, merged once for
 * ./events.ts (EVENT_PAYLOADS, SESSION_EVENT_SCHEMAS): `aux.model_call` (./auxModelCall.ts) and
 * `span.wakeup_scheduled` (./wakeupEvents.ts).
 */
import { AUX_EVENT_PAYLOADS, AUX_EVENT_SCHEMAS } from './auxModelCall.js';
import { WAKEUP_EVENT_PAYLOADS, WAKEUP_EVENT_SCHEMAS } from './wakeupEvents.js';

export const EXTENSION_EVENT_PAYLOADS = { ...AUX_EVENT_PAYLOADS, ...WAKEUP_EVENT_PAYLOADS };
export const EXTENSION_EVENT_SCHEMAS = { ...AUX_EVENT_SCHEMAS, ...WAKEUP_EVENT_SCHEMAS };
