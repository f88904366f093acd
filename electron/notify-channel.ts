/** The window asks main to show a desktop notification (a new step waits). Its own module: the preload bundles it and nothing else of main's. */
export const NOTIFY_CHANNEL = 'executor:notify';
