import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files mostly wait on processes, sockets and servers, so two run at once even on a
    // 2-core machine (vitest's default there is one): the full suite takes about half as long.
    // Files that restart the shared fault servers serialize on core/test/faultLock.ts; every
    // file's real-adapter state lives in its own namespace (test/kit/harness.ts realAdapterEnv).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ['default'],
    // eventsource-parser (imported by the MCP SDK's HTTP client transports) ships its TypeScript
    // source under the `source` condition we resolve workspace packages with: both are inlined
    // (transformed by vite), so Node is never handed that .ts file
    server: { deps: { inline: ['eventsource-parser', /@modelcontextprotocol\/sdk/] } },
  },
});
