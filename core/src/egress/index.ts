/** The egress policy: one function set for every request made on a tenant's behalf. */
export {
  classifyAddress,
  isNonPublicAddress,
  canonicalAddress,
  type AddressKind,
  type AddressClass,
} from './addresses.js';
export {
  createEgressPolicy,
  parsePrivateHostRules,
  normalizeHost,
  egressRefusalIn,
  EgressRefusedError,
  ALLOW_PRIVATE_SETTING,
  type EgressPolicy,
  type EgressPolicyOptions,
  type EgressLookup,
  type PrivateHostRule,
  type ResolvedAddress,
} from './policy.js';
export {
  egressDispatcher,
  egressFetch,
  type HttpFetch,
  type EgressDispatcherOptions,
} from './dispatcher.js';
