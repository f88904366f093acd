/** The window asks main for the OS folder picker (the first run's workspace root). Its own module: the preload bundles it and nothing else of main's. */
export const PICK_FOLDER_CHANNEL = 'executor:pick-folder';
