/**
 * Outbound: TCP on the sandbox's loopback → the platform proxy's unix socket (with no network
 * namespace but loopback, the sandbox's only way out).
 */
import * as net from 'node:net';

export function startProxyForwarder(
  listen: { host: string; port: number },
  socketPath: string,
): Promise<net.Server> {
  const server = net.createServer((client) => {
    const upstream = net.connect(socketPath);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
