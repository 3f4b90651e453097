package io.jverbs.readme;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's Java programs are test sources: each {@code ```java} block of the top-level
 * README must be, word for word, a class of this package (with its package line removed), which
 * the build compiles, so the README cannot drift from the API. Prints
 * {@code readme-snippets: N compiled}.
 */
class ReadmeSnippetsTest {
    private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern CLASS = Pattern.compile("public final class (\\w+)");

    @Test
    void everyJavaBlockOfTheReadmeIsACompiledTestSource() throws Exception {
        Path root = Path.of("").toAbsolutePath();
        while (!Files.isDirectory(root.resolve("jverbs-highlevel"))) { // Maven runs it in the module's folder
            root = root.getParent();
        }
        Path readme = root.resolve("README.md");
        Path sources = readme.getParent().resolve("jverbs-highlevel/src/test/java/io/jverbs/readme");
        Matcher m = BLOCK.matcher(Files.readString(readme));
        List<String> compiled = new ArrayList<>();
        while (m.find()) {
            String snippet = m.group(1);
            Matcher name = CLASS.matcher(snippet);
            assertTrue(name.find(), "a README Java block declares a public final class: " + snippet.lines().findFirst());
            Path source = sources.resolve(name.group(1) + ".java");
            assertTrue(Files.exists(source), "the README's " + name.group(1) + " is a test source at " + source);
            String body = Files.readString(source).replaceFirst("package io\\.jverbs\\.readme;\\n\\n", "");
            assertEquals(body, snippet, "the README's " + name.group(1) + " differs from " + source);
            compiled.add(name.group(1));
        }
        assertFalse(compiled.isEmpty(), "the README shows at least one program");
        System.out.println("readme-snippets: " + compiled.size() + " compiled " + compiled);
    }
}
