/**
 * Preloaded (NODE_OPTIONS=--require) by `make test-node22` and `make test-node24`: node_modules/better-sqlite3 is
 * compiled for the Node that ran `npm ci` (20), and a native addon loads only in the Node it was built for. This
 * sends the load of its addon to a copy built for the running Node (the path in SWITCHYARD_BETTER_SQLITE3_ADDON),
 * in this process and, through NODE_OPTIONS, in every process it starts (jest workers, gateway processes, the CLI).
 * Everything else, better-sqlite3's JavaScript included, comes from the project's node_modules.
 */
'use strict';
const addon = process.env.SWITCHYARD_BETTER_SQLITE3_ADDON;
if (addon) {
  const dlopen = process.dlopen;
  process.dlopen = function (module, filename, ...rest) {
    const target = /[\\/]better-sqlite3[\\/]build[\\/]Release[\\/]better_sqlite3\.node$/.test(filename)
      ? addon
      : filename;
    return dlopen.call(this, module, target, ...rest);
  };
}
