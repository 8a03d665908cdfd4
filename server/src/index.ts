export { startServer, type RunningServer } from './start.js';
export { createPlatform, type Adapters, type Platform } from './platform.js';
export { createSandboxRuntime } from './sandboxRuntime.js';
export {
  selectComponents,
  defaultBus,
  defaultCoordination,
  type ComponentOverrides,
} from './components.js';
export {
  sandboxDriverFor,
  localDriver,
  nomadDriver,
  type SandboxDriverFactory,
} from './sandboxDriver.js';
