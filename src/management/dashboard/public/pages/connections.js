// The open connections, each with a button that closes it (DELETE /api/connections/{name}, as
// an operator or a reconnect test does).
import { api, part } from '../api.js';
import { bytesPerSecond, count, fill, h, problem, table } from '../dom.js';

export function connectionsPage() {
  const body = h('div');
  const element = h('section', {}, h('h1', { text: 'Connections' }), body);

  /** @param {any} connection */
  async function close(connection) {
    if (!window.confirm(`Close the connection ${connection.name}?`)) return;
    try {
      await api(`/connections/${part(connection.name)}`, {
        method: 'DELETE',
        headers: { 'X-Reason': 'Closed from the dashboard' },
      });
      await refresh();
    } catch (error) {
      problem(
        `Could not close ${connection.name}: ${error instanceof Error ? error.message : error}`,
      );
    }
  }

  async function refresh() {
    const connections = await api('/connections');
    fill(
      body,
      table(
        [
          'Name',
          'User',
          'Virtual host',
          'Client',
          'Channels',
          'State',
          'From client',
          'To client',
          'Connected',
          '',
        ],
        connections.map((/** @type {any} */ c) => [
          c.name,
          c.user ?? '',
          c.vhost ?? '',
          client(c.client_properties),
          count(c.channels),
          c.state ?? '',
          bytesPerSecond(c.recv_oct_details?.rate ?? 0),
          bytesPerSecond(c.send_oct_details?.rate ?? 0),
          c.connected_at ? new Date(c.connected_at).toLocaleTimeString('en-GB') : '',
          h('button', {
            type: 'button',
            class: 'danger',
            'data-close': c.name,
            text: 'Close',
            onclick: () => close(c),
          }),
        ]),
        'No connections.',
      ),
    );
  }

  return { title: 'Connections', nav: 'connections', element, refresh };
}

/** @param {any} properties the client's own description of itself */
function client(properties) {
  if (!properties) return '';
  const name = properties.connection_name ?? properties.product ?? '';
  return [name, properties.version, properties.platform].filter(Boolean).join(' · ');
}
