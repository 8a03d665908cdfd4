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
    reporters: ['default'],
    // eventsource-parser (imported by the MCP SDK's HTTP client transports) ships its TypeScript
    // source under the `source` condition we resolve workspace packages with: both are inlined
    // (transformed by vite), so Node is never handed that .ts file
    server: { deps: { inline: ['eventsource-parser', /@modelcontextprotocol\/sdk/] } },
  },
});
