'use strict';
// Stands in for Electron's utility process in tests (there is no Electron binary here): Node's IPC
// channel dressed as process.parentPort, with Electron's shape ({ data } events, postMessage), then
// the module Electron would run as the entry script.
const { EventEmitter } = require('node:events');

// Bound now: the worker strips the global `process` before user code, as it would in Electron.
const sendToParent = process.send.bind(process);
const parentPort = new EventEmitter();
parentPort.postMessage = (message) => sendToParent(message);
process.on('message', (data) => parentPort.emit('message', { data, ports: [] }));
process.parentPort = parentPort;

const [modulePath] = process.argv.splice(2, 1);
require(modulePath);
