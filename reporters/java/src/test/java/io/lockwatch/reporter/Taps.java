// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.util.List;
import java.util.function.Consumer;

/** The tests' tap: the lines of a reporter whose owner is "p". */
final class Taps {
    private static final String PID = ":" + ProcessHandle.current().pid() + "/";

    private Taps() {}

    /**
     * Keeps each line in lines, the "p:&lt;pid&gt;/" of its owner written "p/"
     * (the process part is "&lt;LOCKWATCH_OWNER&gt;:&lt;pid&gt;"); an owner "p/"
     * without the pid is written "p?/", and fails the test that reads it.
     */
    static Consumer<String> into(List<String> lines) {
        return l -> lines.add(l.replace(" p/", " p?/").replace(" p" + PID, " p/"));
    }
}
