/** The command runners behind run_command (the `CommandRunner` port). */
export { bubblewrapRunner, type BubblewrapOptions } from './bubblewrap.js';
export { unconfinedRunner } from './unconfined.js';
