import { join } from 'node:path';
import type { Config } from './config.js';
import { SecretBox } from './crypto.js';
import { EmbeddedBus } from './adapters/embedded/bus.js';
import { embeddedCoordination } from './adapters/embedded/coordination.js';
import { openEmbeddedStore } from './adapters/embedded/documentStore.js';
import type { CommandBus } from './ports/bus.js';
import type { Coordination } from './ports/coordination.js';
import type { DocumentStore } from './ports/store.js';
import { openCollections, type Collections } from './domain/collections.js';
import { AgentService } from './domain/agents.js';
import { AuthService } from './domain/auth.js';
import { EnvironmentService } from './domain/environments.js';
import { EventLog } from './domain/eventLog.js';
import { ModelResolver } from './domain/models.js';
import { SessionService } from './domain/sessions.js';

/** Everything gateway and workers share: the adapters chosen by config and the domain services. */
export interface Platform {
  config: Config;
  store: DocumentStore;
  bus: CommandBus;
  coordination: Coordination;
  collections: Collections;
  secrets: SecretBox;
  auth: AuthService;
  agents: AgentService;
  environments: EnvironmentService;
  sessions: SessionService;
  models: ModelResolver;
  events: EventLog;
  close(): Promise<void>;
}

export interface PlatformOverrides {
  store?: DocumentStore;
  bus?: CommandBus;
  coordination?: Coordination;
}

export async function createPlatform(config: Config, overrides: PlatformOverrides = {}): Promise<Platform> {
  const store = overrides.store ?? (await openEmbeddedStore({ dir: join(config.dataDir, 'store') }));
  await store.ready();
  const bus = overrides.bus ?? new EmbeddedBus();
  const coordination = overrides.coordination ?? embeddedCoordination();
  const collections = openCollections(store);
  const secrets = new SecretBox(config.rootSecret);
  const models = new ModelResolver(collections, secrets, config.vendor);
  const events = new EventLog(collections, coordination.pubsub);
  const agents = new AgentService(collections, models, secrets);
  const environments = new EnvironmentService(collections);
  const sessions = new SessionService(collections, agents, models, events, bus, coordination.pubsub);
  const auth = new AuthService(collections, config.operatorKeyHash);
  await auth.bootstrap();
  return {
    config, store, bus, coordination, collections, secrets, auth, agents, environments, sessions, models, events,
    async close() {
      await bus.close();
      await coordination.close();
      await store.close();
    },
  };
}
