/**
 * The architecture, enforced: storage and filters at the bottom, messages and exchanges beside
 * them, queues above, the broker on top. Nothing imports upward and there are no cycles.
 * `npm run lint` checks it.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'storage-knows-no-queues',
      comment:
        'src/storage is the bottom floor: it knows nothing of messages, queues or the broker.',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/(message|queues|filters|exchanges|broker)' },
    },
    {
      name: 'filters-know-no-storage',
      comment: 'src/filters works on header tables only.',
      severity: 'error',
      from: { path: '^src/filters/' },
      to: { path: '^src/(storage|queues|exchanges|broker)' },
    },
    {
      name: 'exchanges-know-no-queues',
      comment: 'src/exchanges routes to destination names; it knows no queue or storage engine.',
      severity: 'error',
      from: { path: '^src/exchanges/' },
      to: { path: '^src/(storage|queues|broker)', pathNot: '^src/storage/types\\.ts$' },
    },
    {
      name: 'messages-know-no-queues',
      severity: 'error',
      from: { path: '^src/message/' },
      to: { path: '^src/(queues|broker|exchanges|filters)' },
    },
    {
      name: 'queues-know-no-broker',
      comment:
        'Queue kinds take hooks (dead-letter router, onDelete) instead of importing the broker.',
      severity: 'error',
      from: { path: '^src/queues/' },
      to: { path: '^src/(broker|exchanges)' },
    },
    {
      name: 'nothing-below-imports-the-server',
      comment:
        'src/server sits on top of the broker; the in-process library never loads it. Only mqlite/testing/server, an entry of its own, serves a broker for tests.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(server|management|cli|testing/server)/' },
      to: { path: '^src/server/' },
    },
    {
      name: 'shovels-sit-on-the-broker',
      comment:
        'src/shovels (the mover and its AMQP client) sits on top of the broker: the broker loads it by dynamic import at its first shovel, and nothing else below reaches it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(shovels|server|cli|testing)/' },
      to: { path: '^src/shovels/', dependencyTypesNot: ['dynamic-import'] },
    },
    {
      name: 'the-server-knows-no-management',
      comment:
        'src/management sits on top of src/server and reports on it; only the entry file of mqlite/server composes the two (its listen() starts both), and the test kit starts them as a test asks.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: '^src/(management|cli|testing/server)/|^src/server/index\\.ts$',
      },
      to: { path: '^src/management/' },
    },
    {
      name: 'nothing-imports-the-command-line',
      comment: 'src/cli is the top floor: the binary and its commands.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'library-knows-no-tests',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/testing/' },
      to: { path: '^(test|bench|examples)/|^src/testing/' },
    },
    {
      name: 'no-dev-dependencies-in-library',
      severity: 'error',
      from: { path: '^src/' },
      // Node's types are named by the entry points' declarations; a consumer installs them.
      to: { dependencyTypes: ['npm-dev'], pathNot: '^node_modules/@types/node/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types'] },
  },
};
