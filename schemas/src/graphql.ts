/**
 * The GraphQL contract, served by the gateway at `/graphql` (queries, mutations) and
 * `/graphql/stream` (subscriptions over graphql-sse; also `/graphql` with
 * `Accept: text/event-stream`). It is a view over the same services as REST /v1: the same
 * tenant scoping, the same validation and the same error messages.
 *
 * Errors carry `extensions: { code, type, http_status }` where `type`/`http_status` are the
 * REST error type and status (invalid_request → BAD_USER_INPUT, not_found → NOT_FOUND,
 * conflict → CONFLICT, …); validation errors add `extensions.field`.
 *
 * Create/update inputs are the `JSON` scalar on purpose: they are validated by the REST
 * TypeBox schemas (AgentCreate, AgentUpdate, EnvironmentCreate, SessionCreate), so GraphQL
 * accepts exactly the REST bodies (snake_case fields) and rejects the same inputs with the
 * same field-named messages, without a second, drifting copy of every input type.
 */
export const typeDefs = /* GraphQL */ `
  "Arbitrary JSON: objects, arrays, strings, numbers, booleans, null."
  scalar JSON

  enum Order {
    ASC
    DESC
  }

  "Derived, never stored: TERMINATED if terminated, RUNNING while a turn runs, else IDLE."
  enum SessionStatus {
    IDLE
    RUNNING
    RESCHEDULING
    TERMINATED
  }

  type ModelConfig {
    id: String!
    "Effort level (low, medium, high, xhigh, max) when set."
    effort: String
    "standard or fast when set."
    speed: String
    inferenceGeo: String
  }

  "An agent at one version. The current version unless fetched with agent(id, version) or agentVersions."
  type Agent {
    id: ID!
    version: Int!
    name: String!
    description: String
    model: ModelConfig!
    system: String
    tools: JSON!
    skills: JSON!
    "MCP servers; authorization tokens are never served (has_authorization_token instead)."
    mcpServers: JSON!
    environmentId: ID
    environment: Environment
    memoryStoreId: String
    harness: String!
    metadata: JSON!
    executionIdentity: JSON!
    multiagent: JSON
    archived: Boolean!
    archivedAt: String
    createdAt: String!
    "For a version: when that version was created."
    updatedAt: String!
  }

  type Environment {
    id: ID!
    name: String!
    description: String
    "The SDK view: { type: cloud, networking, packages } or { type: self_hosted }."
    config: JSON!
    baseImage: String
    packages: JSON!
    network: JSON!
    env: JSON!
    metadata: JSON!
    scope: String!
    archivedAt: String
    createdAt: String!
    updatedAt: String!
  }

  "The agent definition a session is pinned to (with any session overrides applied)."
  type SessionAgent {
    id: ID!
    version: Int!
    name: String!
    description: String
    model: ModelConfig!
    system: String
    tools: JSON!
    skills: JSON!
    mcpServers: JSON!
  }

  type Usage {
    inputTokens: Int!
    outputTokens: Int!
    cacheReadInputTokens: Int!
    cacheCreationInputTokens: Int!
  }

  type Session {
    id: ID!
    title: String
    status: SessionStatus!
    agentId: ID!
    agentVersion: Int!
    agent: SessionAgent!
    environmentId: ID!
    environment: Environment
    metadata: JSON!
    resources: JSON!
    vaultIds: [String!]!
    budget: JSON
    usage: Usage!
    "The session's outcomes (user.define_outcome), oldest first."
    outcomeEvaluations: [OutcomeEvaluation!]!
    archivedAt: String
    terminatedAt: String
    createdAt: String!
    updatedAt: String!
  }

  "An outcome's state: pending, evaluating, running (revising), then satisfied, max_iterations_reached, failed or interrupted."
  type OutcomeEvaluation {
    outcomeId: ID!
    description: String!
    result: String!
    iteration: Int!
    explanation: String
    completedAt: String
  }

  "The cost report (operator key only): the runtime ledger priced by the price card and, with source billed or all, the providers' billed rows; rows as REST serves them."
  type CostReport {
    startingAt: String!
    endingAt: String!
    groupBy: [String!]!
    source: String!
    granularity: String!
    isInvoiceGrade: Boolean!
    dataCompleteness: String!
    reconciledAt: String
    currency: String!
    calls: Int!
    usage: JSON!
    totalCost: Float
    totalEstimatedCost: Float
    rows: JSON!
    "With source BILLED or ALL: the ledger and every billing dataset read, with its status and error (REST's datasets); null for LEDGER."
    datasets: JSON
  }

  "A persisted (canonical) session event. data is the event payload, as served by REST."
  type SessionEvent {
    id: ID!
    seq: Int!
    type: String!
    sessionId: ID!
    createdAt: String!
    data: JSON!
  }

  type AgentConnection {
    nodes: [Agent!]!
    hasMore: Boolean!
    "Cursor for the next page (pass as page), null on the last page."
    nextPage: String
    "Cursor for the previous page, null on the first page."
    prevPage: String
  }

  type EnvironmentConnection {
    nodes: [Environment!]!
    hasMore: Boolean!
    nextPage: String
    prevPage: String
  }

  type SessionConnection {
    nodes: [Session!]!
    hasMore: Boolean!
    nextPage: String
    prevPage: String
  }

  type SessionEventConnection {
    nodes: [SessionEvent!]!
    hasMore: Boolean!
    nextPage: String
    prevPage: String
  }

  "A session.error of the tenant, newest first (the console dashboard)."
  type DashboardError {
    sessionId: ID!
    seq: Int!
    type: String!
    message: String!
    createdAt: String!
  }

  "Tenant-wide figures for the console dashboard; archived agents, environments and sessions are not counted."
  type Dashboard {
    agents: Int!
    environments: Int!
    sessions: Int!
    "Sessions running a turn now (counted up to 1000)."
    runningSessions: Int!
    "The newest session errors of the last 7 days (at most 10)."
    recentErrors: [DashboardError!]!
  }

  type Query {
    dashboard: Dashboard!
    "The agent's current version, or the given version."
    agent(id: ID!, version: Int): Agent
    "Newest first. limit 1..1000 (default 20)."
    agents(limit: Int, page: String, includeArchived: Boolean): AgentConnection!
    "Newest version first."
    agentVersions(agentId: ID!, limit: Int, page: String): AgentConnection!
    environment(id: ID!): Environment
    environments(limit: Int, page: String, includeArchived: Boolean): EnvironmentConnection!
    session(id: ID!): Session
    sessions(
      agentId: ID
      status: SessionStatus
      limit: Int
      page: String
      order: Order
      includeArchived: Boolean
    ): SessionConnection!
    "Persisted events in seq order (ASC by default). limit 1..1000 (default 100); afterSeq keeps seq > afterSeq."
    sessionEvents(
      sessionId: ID!
      afterSeq: Int
      limit: Int
      order: Order
      page: String
      types: [String!]
    ): SessionEventConnection!
    "The deployment's model spend (operator key only; REST GET /v1/svc/cost_report). groupBy: tenant, agent, session, model, day, kind."
    costReport(
      startingAt: String!
      endingAt: String
      groupBy: [String!]
      tenantId: ID
      agentId: ID
      sessionId: ID
      kind: String
      "ledger (default), billed or all: REST's source parameter."
      source: String
    ): CostReport!
  }

  type Mutation {
    "input: the REST POST /v1/environments body."
    createEnvironment(input: JSON!): Environment!
    "input: the REST POST /v1/agents body (name, model, system, tools, …)."
    createAgent(input: JSON!): Agent!
    "input: the REST agent update body; every change makes a new version."
    updateAgent(id: ID!, input: JSON!): Agent!
    archiveAgent(id: ID!): Agent!
    "input: the REST POST /v1/sessions body (agent, environment_id, …)."
    createSession(input: JSON!): Session!
    "Appends a user.message (exactly one of text or content blocks) and starts a turn. Returns the appended event."
    sendMessage(sessionId: ID!, text: String, content: JSON): SessionEvent!
    "Appends a user.interrupt: the running turn stops. Returns the appended event."
    interrupt(sessionId: ID!): SessionEvent!
  }

  type Subscription {
    """
    The session's canonical (persisted) events, in seq order, exactly once each: the same
    events the REST SSE stream carries (live-only chunk events are not delivered).
    With afterSeq: replays persisted events with seq > afterSeq first, then live ones.
    Without afterSeq: events appended after the subscription was accepted.
    With threadId (an id of Session.threads): that thread's own log instead (the primary's is
    the session's); a thread id not of this session is NOT_FOUND.
    """
    sessionEvents(sessionId: ID!, afterSeq: Int, threadId: ID): SessionEvent!
  }
`;
